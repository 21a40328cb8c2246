//! Entity tags of answers.

use serde::Serialize;

use crate::error::{Error, Result};

/// The strong entity tag of an answer body: it changes whenever the body
/// does, so whenever what the resource shows changes.
pub fn etag(body: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let hash = Sha256::digest(body);
    // Written into one buffer: formatting each byte took longer than the
    // hash (docs/storage.md, S.36).
    let mut tag = [b'"'; 34];
    hex::encode_to_slice(&hash[..16], &mut tag[1..33]).expect("32 digits for 16 bytes");
    String::from_utf8(tag.to_vec()).expect("quotes and hex digits")
}

/// Whether an `If-Match` or `If-None-Match` list names `tag` (`*` names
/// any).
pub fn etag_listed(list: &str, tag: &str) -> bool {
    list.split(',').map(str::trim).any(|t| t == "*" || t == tag || t.strip_prefix("W/") == Some(tag))
}

/// The entity tag of a resource as its answers show it.
pub fn etag_of_wire<T: Serialize>(value: &T) -> Result<Option<String>> {
    Ok(Some(etag(&serde_json::to_vec(value).map_err(Error::internal)?)))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_tag_is_the_quoted_hex_of_the_first_half_of_the_bodys_sha256() {
        // SHA-256 of "abc": ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad.
        assert_eq!(super::etag(b"abc"), "\"ba7816bf8f01cfea414140de5dae2223\"");
    }
}
