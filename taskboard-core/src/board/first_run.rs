//! The first owner's generated password, kept in the data directory until
//! it has served, so that a start-up message scrolled away or a closed
//! terminal does not lock everyone out of a new board.

use std::path::PathBuf;

use super::{Board, Bootstrap};
use crate::credentials;
use crate::error::{Error, Result};
use crate::model::Member;
use crate::records::{MemberRecord, Records};
use crate::storage::tables::MEMBERS;
use crate::storage::{Direction, KeyRange, Scan};

/// Name of the file, in the data directory, that holds the generated
/// password of the first owner while it is unused (mode 0600).
pub const INITIAL_PASSWORD_FILE: &str = "initial-owner-password";

/// The first owner's generated password, not yet used nor changed.
#[derive(Debug, Clone)]
pub struct InitialPassword {
    pub owner: Member,
    pub password: String,
    /// The file that keeps it.
    pub path: PathBuf,
}

/// The member the bootstrap created: members are keyed by UUIDv7, so the
/// first one in the table is the oldest.
fn first_member(r: &(impl Records + ?Sized)) -> Result<Option<MemberRecord>> {
    let mut first = None;
    r.scan(MEMBERS, KeyRange::all(), Direction::Forward, &mut |_, v| {
        first = Some(crate::storage::codec::decode(v)?);
        Ok(Scan::Stop)
    })?;
    Ok(first)
}

impl Board {
    fn initial_password_path(&self) -> Option<PathBuf> {
        self.data_dir().map(|d| d.join(INITIAL_PASSWORD_FILE))
    }

    /// Keeps a password the bootstrap generated in
    /// [`INITIAL_PASSWORD_FILE`], readable by its owner only. `None` when
    /// the password was chosen (nothing to keep) or the board has no data
    /// directory.
    pub async fn keep_initial_password(&self, boot: &Bootstrap) -> Result<Option<InitialPassword>> {
        let (Some(password), Some(path)) = (&boot.generated_password, self.initial_password_path()) else {
            return Ok(None);
        };
        let contents = format!("{password}\n");
        let file = path.clone();
        tokio::task::spawn_blocking(move || {
            // A file left by an earlier board in this directory.
            match std::fs::remove_file(&file) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::internal(e)),
            }
            credentials::write_private(&file, contents.as_bytes())
        })
        .await
        .map_err(Error::internal)??;
        Ok(Some(InitialPassword { owner: boot.owner.clone(), password: password.clone(), path }))
    }

    /// The kept first-owner password while it is unused: the file exists,
    /// the member the bootstrap created is active, has not been active
    /// since its creation (no request with its credentials: its
    /// `last_seen_at` is still its `created_at`), and the password is
    /// still its password. Otherwise the file, if any, is removed and the
    /// answer is `None`.
    pub async fn initial_password(&self) -> Result<Option<InitialPassword>> {
        let Some(path) = self.initial_password_path() else { return Ok(None) };
        let password = match tokio::fs::read_to_string(&path).await {
            Ok(text) => text.trim_end_matches(['\r', '\n']).to_string(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::internal(e)),
        };
        let candidate = self
            .read(|r| match first_member(r)? {
                Some(m) if m.is_active && m.last_seen_at == m.created_at => {
                    Ok(r.secret(m.id)?.password_hash.map(|hash| (m, hash)))
                }
                _ => Ok(None),
            })
            .await?;
        let unused = match candidate {
            Some((member, hash)) => {
                let plain = password.clone();
                let same = tokio::task::spawn_blocking(move || credentials::verify_password(&plain, &hash))
                    .await
                    .map_err(Error::internal)?;
                same.then_some(member)
            }
            None => None,
        };
        match unused {
            Some(member) => Ok(Some(InitialPassword { owner: member.to_wire(), password, path })),
            None => {
                match tokio::fs::remove_file(&path).await {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(Error::internal(e)),
                }
                Ok(None)
            }
        }
    }
}
