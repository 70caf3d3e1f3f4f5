//! Where a ROOT argument becomes a store: the one place that decides
//! whether a store may be created. Read-only and worker commands open an
//! existing store only; `dispatch`, `ingest` and `resume` may create one
//! (see `docs/cli.md`, "Which commands create a store").

use super::location::StoreLocation;
use super::postgres::PgStore;
use super::sqlite::{SqliteStore, DB_FILE, SCRATCH_PREFIX};
use super::Backend;
use crate::error::Result;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What to do when ROOT holds no store yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// ROOT must already hold a DHP store; nothing is created.
    Existing,
    /// Create ROOT (with parents) and a new store if there is none.
    Create,
    /// Create a new store only if ROOT is an existing, empty directory
    /// (the user made it for this); otherwise like [`OpenMode::Existing`].
    CreateInEmptyDir,
}

/// An opened ROOT.
pub struct OpenedRoot {
    /// The store.
    pub backend: Arc<dyn Backend>,
    /// The store's directory (canonical), where liveness tokens and ship
    /// buffers live; `None` for a PostgreSQL store.
    pub dir: Option<PathBuf>,
}

/// Open the store a ROOT argument names, creating one only as `mode`
/// allows. An existing `dhp.sqlite3` that is empty or not a DHP store is
/// refused, never re-initialised.
///
/// A `postgres://` ROOT opens a PostgreSQL store: [`OpenMode::Existing`]
/// requires a DHP store in its schema; the creating modes create the
/// schema and tables when the schema is missing or empty (a schema that
/// holds anything else is refused). Any other URL scheme is an error.
pub fn open_root(root: &Path, mode: OpenMode) -> Result<OpenedRoot> {
    if let StoreLocation::Postgres(pg) = StoreLocation::from_path(root)? {
        let store = match mode {
            OpenMode::Existing => PgStore::open_existing(&pg)?,
            OpenMode::Create | OpenMode::CreateInEmptyDir => PgStore::open(&pg)?,
        };
        return Ok(OpenedRoot { backend: Arc::new(store), dir: None });
    }
    let create = match mode {
        OpenMode::Existing => false,
        OpenMode::Create => true,
        OpenMode::CreateInEmptyDir => is_empty_dir(root),
    };
    let store = SqliteStore::open_with(root, create)?;
    let dir = store.root().to_path_buf();
    Ok(OpenedRoot { backend: Arc::new(store), dir: Some(dir) })
}

/// An existing directory with nothing in it but another creator's scratch
/// file (so two concurrent first dispatches both succeed).
fn is_empty_dir(root: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(root) else { return false };
    entries.flatten().all(|e| {
        let name = e.file_name();
        let name = name.to_string_lossy();
        name.starts_with(SCRATCH_PREFIX) || name == DB_FILE
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concurrent_creators_share_one_store() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("new");
        let opened: Vec<_> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..8).map(|_| s.spawn(|| open_root(&root, OpenMode::Create).map(|o| o.dir))).collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for o in &opened {
            assert!(o.is_ok(), "{o:?}");
        }
        let left: Vec<String> =
            std::fs::read_dir(&root).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
        assert!(left.iter().all(|n| !n.starts_with(SCRATCH_PREFIX)), "scratch files left: {left:?}");
    }

    #[test]
    fn existing_mode_creates_nothing_and_empty_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("s");
        let e = open_root(&root, OpenMode::Existing).err().expect("no store");
        assert!(matches!(e, crate::Error::NoStore { .. }), "{e:?}");
        assert!(!root.exists());
        std::fs::create_dir(&root).unwrap();
        std::fs::write(root.join(DB_FILE), b"").unwrap();
        for mode in [OpenMode::Existing, OpenMode::Create, OpenMode::CreateInEmptyDir] {
            let e = open_root(&root, mode).err().expect("empty file refused");
            assert!(e.to_string().contains("empty"), "{e}");
            assert_eq!(std::fs::metadata(root.join(DB_FILE)).unwrap().len(), 0);
        }
    }
}
