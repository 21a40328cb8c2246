//! Validated newtypes (docs/rules.md, requests and errors): a value of one of these types is
//! valid, so no handler re-checks it. Each deserialises through `TryFrom`,
//! so a bad request value fails while parsing with a message that says
//! what is wrong; the server prefixes it with the field path.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::Error;

/// Why a text value was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidValue(pub String);

impl fmt::Display for InvalidValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InvalidValue {}

impl InvalidValue {
    /// The same problem as a validation [`Error`] naming `field`.
    pub fn at(self, field: &str) -> Error {
        Error::invalid(field, self.0)
    }
}

macro_rules! text_type {
    ($(#[$doc:meta])* $name:ident, trim = $trim:expr, min = $min:expr, max = $max:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            pub fn new(value: impl Into<String>) -> Result<Self, InvalidValue> {
                let value: String = value.into();
                let value = if $trim { value.trim().to_string() } else { value };
                let chars = value.chars().count();
                if !($min..=$max).contains(&chars) {
                    return Err(InvalidValue(if $min == 0 {
                        format!("must be at most {} characters, got {chars}", $max)
                    } else if $trim && chars == 0 {
                        "must not be empty".to_string()
                    } else {
                        format!("must be {}-{} characters, got {chars}", $min, $max)
                    }));
                }
                Ok($name(value))
            }
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl TryFrom<String> for $name {
            type Error = InvalidValue;
            fn try_from(value: String) -> Result<Self, InvalidValue> {
                $name::new(value)
            }
        }

        impl From<$name> for String {
            fn from(value: $name) -> String {
                value.0
            }
        }

        impl std::ops::Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({
                    "type": "string",
                    "minLength": $min,
                    "maxLength": $max,
                })
            }
        }
    };
}

text_type!(
    /// A member or project name: 1–200 characters after trimming.
    Name, trim = true, min = 1, max = 200
);
text_type!(
    /// A task or step title: 1–500 characters after trimming.
    Title, trim = true, min = 1, max = 500
);
text_type!(
    /// A label name: 1–64 characters after trimming.
    LabelName, trim = true, min = 1, max = 64
);
text_type!(
    /// A description or prompt: up to 100,000 characters.
    LongText, trim = false, min = 0, max = 100_000
);
text_type!(
    /// The reason given when rejecting a task: 1–10,000 characters.
    Reason, trim = true, min = 1, max = 10_000
);

/// A slug: 1–64 characters of `a-z`, `0-9`, `_` and `-`.
///
/// ```
/// use taskboard_wire::validate::Slug;
/// assert_eq!(Slug::new("web-app_2").unwrap().as_str(), "web-app_2");
/// assert!(Slug::new("Web App").is_err());
/// assert!(Slug::new("").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Slug(String);

impl Slug {
    pub fn new(value: impl Into<String>) -> Result<Slug, InvalidValue> {
        let value: String = value.into();
        if value.is_empty() || value.len() > 64 {
            return Err(InvalidValue(format!("must be 1-64 characters, got {}", value.chars().count())));
        }
        if let Some(bad) = value.chars().find(|c| !matches!(c, 'a'..='z' | '0'..='9' | '_' | '-')) {
            return Err(InvalidValue(format!("may contain only a-z, 0-9, '_' and '-', found {bad:?}")));
        }
        Ok(Slug(value))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for Slug {
    type Error = InvalidValue;
    fn try_from(value: String) -> Result<Slug, InvalidValue> {
        Slug::new(value)
    }
}

impl From<Slug> for String {
    fn from(value: Slug) -> String {
        value.0
    }
}

impl std::ops::Deref for Slug {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Slug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl schemars::JsonSchema for Slug {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Slug".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "string", "pattern": "^[a-z0-9_-]{1,64}$"})
    }
}

/// A label colour: `#RGB` or `#RRGGBB`, stored as given.
///
/// ```
/// use taskboard_wire::validate::Color;
/// assert_eq!(Color::default().as_str(), "#6366f1");
/// assert!(Color::new("#0a0").is_ok());
/// assert!(Color::new("green").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Color(String);

impl Color {
    pub const DEFAULT: &'static str = "#6366f1";

    pub fn new(value: impl Into<String>) -> Result<Color, InvalidValue> {
        let value: String = value.into();
        let hex = value.strip_prefix('#').unwrap_or("");
        if (hex.len() == 3 || hex.len() == 6) && hex.chars().all(|c| c.is_ascii_hexdigit()) {
            Ok(Color(value))
        } else {
            Err(InvalidValue(format!("must be #RGB or #RRGGBB, got {value:?}")))
        }
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for Color {
    fn default() -> Color {
        Color(Color::DEFAULT.to_string())
    }
}

impl TryFrom<String> for Color {
    type Error = InvalidValue;
    fn try_from(value: String) -> Result<Color, InvalidValue> {
        Color::new(value)
    }
}

impl From<Color> for String {
    fn from(value: Color) -> String {
        value.0
    }
}

impl schemars::JsonSchema for Color {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Color".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "string", "pattern": "^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$"})
    }
}

/// An email: at most 254 characters, one `@` with text on each side, no
/// whitespace. Single sign-on matches it at a first sign-in.
///
/// ```
/// use taskboard_wire::validate::Email;
/// assert!(Email::new("ana@example.com").is_ok());
/// assert!(Email::new("ana").is_err());
/// assert!(Email::new("a na@example.com").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Email(String);

impl Email {
    pub fn new(value: impl Into<String>) -> Result<Email, InvalidValue> {
        let value: String = value.into();
        let ok = value.len() <= 254
            && !value.chars().any(|c| c.is_whitespace() || c.is_control())
            && value.split_once('@').is_some_and(|(local, domain)| {
                !local.is_empty() && !domain.is_empty() && !domain.contains('@')
            });
        if ok { Ok(Email(value)) } else { Err(InvalidValue(format!("{value:?} is not an email address"))) }
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for Email {
    type Error = InvalidValue;
    fn try_from(value: String) -> Result<Email, InvalidValue> {
        Email::new(value)
    }
}

impl From<Email> for String {
    fn from(value: Email) -> String {
        value.0
    }
}

impl schemars::JsonSchema for Email {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Email".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "string", "format": "email", "maxLength": 254})
    }
}

/// A password: 8–1024 characters (docs/rules.md, members).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Password(String);

impl Password {
    pub fn new(value: impl Into<String>) -> Result<Password, InvalidValue> {
        let value: String = value.into();
        let n = value.chars().count();
        if (8..=1024).contains(&n) {
            Ok(Password(value))
        } else {
            Err(InvalidValue(format!("must be 8-1024 characters, got {n}")))
        }
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Password {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Password(***)")
    }
}

impl TryFrom<String> for Password {
    type Error = InvalidValue;
    fn try_from(value: String) -> Result<Password, InvalidValue> {
        Password::new(value)
    }
}

impl From<Password> for String {
    fn from(value: Password) -> String {
        value.0
    }
}

impl schemars::JsonSchema for Password {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Password".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "string", "minLength": 8, "maxLength": 1024})
    }
}

/// Checks a message's content: at most 100,000 characters (docs/rules.md, requests and errors).
pub fn check_content(content: &str) -> Result<(), InvalidValue> {
    let n = content.chars().count();
    if n > 100_000 {
        return Err(InvalidValue(format!("must be at most 100000 characters, got {n}")));
    }
    Ok(())
}

/// Whether `c` is invisible or reorders text: a format character
/// (Unicode category Cf: bidirectional controls and marks, zero-width
/// characters, the byte order mark, tags …) or a line or paragraph
/// separator. Such a character lets one name pass for another
/// (`invoice\u{202E}fdp.exe` shows as `invoiceexe.pdf`).
pub fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{AD}'
            | '\u{600}'..='\u{605}'
            | '\u{61C}'
            | '\u{6DD}'
            | '\u{70F}'
            | '\u{890}'..='\u{891}'
            | '\u{8E2}'
            | '\u{180E}'
            | '\u{200B}'..='\u{200F}'
            | '\u{2028}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206F}'
            | '\u{FEFF}'
            | '\u{FFF9}'..='\u{FFFB}'
            | '\u{110BD}'
            | '\u{110CD}'
            | '\u{13430}'..='\u{1343F}'
            | '\u{1BCA0}'..='\u{1BCA3}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0001}'
            | '\u{E0020}'..='\u{E007F}'
    )
}

/// Why a file name cannot be shown safely, if it cannot: blank (only
/// white space), or holding a control character or an invisible one
/// ([`is_invisible`]). Shared by project files and attachments.
pub fn unsafe_name_problem(name: &str) -> Option<String> {
    if name.chars().all(char::is_whitespace) {
        return Some("it is blank".to_string());
    }
    name.chars().find(|&c| c.is_control() || is_invisible(c)).map(|c| {
        let what =
            if c.is_control() { "a control character" } else { "an invisible or text-reordering character" };
        format!("it contains {what} (U+{:04X})", u32::from(c))
    })
}

/// Checks a project file name (docs/rules.md, messages and files); the failure is a 400.
pub fn check_file_name(name: &str) -> Result<(), Error> {
    let problem = if name.is_empty() {
        Some("it is empty".to_string())
    } else if name.len() > 255 {
        Some(format!("it is {} bytes long, over 255", name.len()))
    } else if name == "." || name == ".." {
        Some("'.' and '..' are not file names".to_string())
    } else if name.contains(['/', '\\']) {
        Some("it contains '/' or '\\'".to_string())
    } else {
        unsafe_name_problem(name)
    };
    match problem {
        Some(problem) => Err(Error::bad_request(format!(
            "invalid file name {name:?}: {problem}; a file name is 1-255 bytes, not blank, '.' or '..', without '/', '\\', control or invisible characters"
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_trimmed_and_bounded() {
        assert_eq!(Name::new("  Web  ").unwrap().as_str(), "Web");
        assert!(Name::new("   ").is_err());
        assert!(Name::new("x".repeat(201)).is_err());
        assert!(Name::new("é".repeat(200)).is_ok());
    }

    #[test]
    fn slugs_follow_the_pattern() {
        assert!(Slug::new("web-app_2").is_ok());
        assert!(Slug::new("Web").is_err());
        assert!(Slug::new("").is_err());
        assert!(Slug::new("a".repeat(65)).is_err());
        assert!(Slug::new("a b").is_err());
    }

    #[test]
    fn colours_are_hex() {
        assert!(Color::new("#fff").is_ok());
        assert!(Color::new("#A0b1C2").is_ok());
        assert!(Color::new("fff").is_err());
        assert!(Color::new("#ffff").is_err());
        assert!(Color::new("#ggg").is_err());
    }

    #[test]
    fn file_names_refuse_paths_and_controls() {
        assert!(check_file_name("report.pdf").is_ok());
        for bad in
            ["", ".", "..", "a/b", "a\\b", "a\0b", "a\nb", " ", " \t ", "\u{3000}", "a\u{202E}b", "\u{FEFF}a"]
        {
            assert!(check_file_name(bad).is_err(), "{bad:?}");
        }
        assert!(check_file_name(&"x".repeat(256)).is_err());
        assert!(check_file_name("résumé 2024 (final).pdf").is_ok());
        assert!(check_file_name("日本語.txt").is_ok());
    }

    #[test]
    fn invisible_characters_are_the_format_characters_and_separators() {
        for c in
            ['\u{200B}', '\u{200C}', '\u{200D}', '\u{200E}', '\u{200F}', '\u{061C}', '\u{2060}', '\u{FEFF}']
        {
            assert!(is_invisible(c), "U+{:04X}", u32::from(c));
        }
        for c in ('\u{202A}'..='\u{202E}').chain('\u{2066}'..='\u{2069}') {
            assert!(is_invisible(c), "U+{:04X}", u32::from(c));
        }
        for c in ['a', ' ', 'é', '\u{05D0}', '\u{0627}', '\u{FE0F}', '\u{1F600}'] {
            assert!(!is_invisible(c), "U+{:04X}", u32::from(c));
        }
    }
}
