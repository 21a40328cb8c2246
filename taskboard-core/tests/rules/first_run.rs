//! The first owner's generated password, kept in the data directory until
//! the owner has used it or it is changed.

use taskboard_core::board::{Bootstrap, INITIAL_PASSWORD_FILE};
use taskboard_core::model::MemberStatus;
use taskboard_core::validate::{Password, Slug};
use taskboard_core::{Board, BoardOptions};

async fn generated(dir: &std::path::Path) -> (Board, Bootstrap) {
    let board = Board::open(dir, BoardOptions::default()).await.unwrap();
    let boot = board.bootstrap_owner(Slug::new("owner").unwrap(), None).await.unwrap().unwrap();
    (board, boot)
}

#[tokio::test]
async fn a_generated_password_is_kept_private_until_the_owner_is_active() {
    let dir = tempfile::tempdir().unwrap();
    let (board, boot) = generated(dir.path()).await;
    let kept = board.keep_initial_password(&boot).await.unwrap().expect("a generated password is kept");
    let path = dir.path().join(INITIAL_PASSWORD_FILE);
    assert_eq!(kept.path, path);
    assert_eq!(Some(&kept.password), boot.generated_password.as_ref());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), format!("{}\n", kept.password));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    }
    // Later starts find it while it is unused; a login alone changes nothing.
    let again = board.initial_password().await.unwrap().expect("still unused");
    assert_eq!(again.password, kept.password);
    assert_eq!(again.owner.id, boot.owner.id);
    board.login("owner", &kept.password, None).await.unwrap();
    assert!(board.initial_password().await.unwrap().is_some());

    // The owner acting with its credentials has used it.
    let owner = board.actor(boot.owner.id).await.unwrap();
    board.set_status(&owner, MemberStatus::Online).await.unwrap();
    assert!(board.initial_password().await.unwrap().is_none());
    assert!(!path.exists(), "the file is removed");
}

#[tokio::test]
async fn a_changed_password_removes_the_kept_one() {
    let dir = tempfile::tempdir().unwrap();
    let (board, boot) = generated(dir.path()).await;
    board.keep_initial_password(&boot).await.unwrap().unwrap();
    let owner = board.actor(boot.owner.id).await.unwrap();
    board.set_password(&owner, boot.owner.id, Password::new("a chosen password").unwrap()).await.unwrap();
    assert!(board.initial_password().await.unwrap().is_none());
    assert!(!dir.path().join(INITIAL_PASSWORD_FILE).exists());
}

#[tokio::test]
async fn a_chosen_password_or_a_board_in_memory_keeps_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let board = Board::open(dir.path(), BoardOptions::default()).await.unwrap();
    let boot = board
        .bootstrap_owner(Slug::new("owner").unwrap(), Some(Password::new("chosen-password").unwrap()))
        .await
        .unwrap()
        .unwrap();
    assert!(board.keep_initial_password(&boot).await.unwrap().is_none());
    assert!(!dir.path().join(INITIAL_PASSWORD_FILE).exists());
    assert!(board.initial_password().await.unwrap().is_none());

    let memory = Board::open_in_memory(BoardOptions::default()).await.unwrap();
    let boot = memory.bootstrap_owner(Slug::new("owner").unwrap(), None).await.unwrap().unwrap();
    assert!(memory.keep_initial_password(&boot).await.unwrap().is_none());
}

#[tokio::test]
async fn a_stale_file_of_an_earlier_board_is_replaced_or_removed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(INITIAL_PASSWORD_FILE);
    std::fs::create_dir_all(dir.path()).unwrap();
    std::fs::write(&path, "not-the-password\n").unwrap();
    {
        // A board whose owner's password is not the file's: removed.
        let board = Board::open(dir.path(), BoardOptions::default()).await.unwrap();
        board
            .bootstrap_owner(Slug::new("owner").unwrap(), Some(Password::new("chosen-password").unwrap()))
            .await
            .unwrap()
            .unwrap();
        assert!(board.initial_password().await.unwrap().is_none());
        assert!(!path.exists());
    }
    let other = tempfile::tempdir().unwrap();
    let path = other.path().join(INITIAL_PASSWORD_FILE);
    std::fs::write(&path, "left over\n").unwrap();
    let (board, boot) = generated(other.path()).await;
    let kept = board.keep_initial_password(&boot).await.unwrap().unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), format!("{}\n", kept.password));
}
