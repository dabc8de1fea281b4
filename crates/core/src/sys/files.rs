//! Files written and read safely: [`write_atomic`] puts a whole file in place or
//! nothing (a temporary file beside it, written, fsynced, renamed over the target, the
//! folder fsynced), so a full disk or a kill leaves the previous file intact;
//! [`read_capped`] reads a regular file only, and only up to a size cap: a device
//! (`/dev/zero`) or a FIFO is refused at once (opened without blocking, looked at
//! before any byte is read), a file larger than the cap costs at most the cap.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A file read or write that failed: which file, and why.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("{path} is larger than {cap_bytes} bytes, the most s3sweep reads for {what}")]
    TooLarge {
        path: String,
        what: &'static str,
        cap_bytes: u64,
    },
    #[error("{path} is {kind}, not a regular file: s3sweep reads {what} only from a regular file")]
    NotRegular {
        path: String,
        what: &'static str,
        kind: &'static str,
    },
    #[error("{path}: {source}")]
    Io { path: String, source: io::Error },
}

impl FileError {
    fn io(path: &Path, source: io::Error) -> Self {
        FileError::Io {
            path: path.display().to_string(),
            source,
        }
    }
}

/// Test hook, in debug builds only (the tests'; never in a release build): with
/// `S3SWEEP_TEST_FAIL_WRITES_AFTER_BYTES=N` set, every atomic write fails with "no
/// space left on device" once N bytes of its file are written (as a full disk would).
/// Read once per process.
#[cfg(debug_assertions)]
const FAIL_AFTER_ENV: &str = "S3SWEEP_TEST_FAIL_WRITES_AFTER_BYTES";

#[cfg(debug_assertions)]
fn injected_limit() -> Option<u64> {
    static LIMIT: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    *LIMIT.get_or_init(|| std::env::var(FAIL_AFTER_ENV).ok().and_then(|v| v.parse().ok()))
}

#[cfg(not(debug_assertions))]
fn injected_limit() -> Option<u64> {
    None
}

/// A writer that fails with ENOSPC past `limit` bytes (the test hook above).
struct Limited<W> {
    inner: W,
    written: u64,
    limit: Option<u64>,
}

impl<W: Write> Write for Limited<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let allowed = match self.limit {
            Some(limit) if self.written >= limit => return Err(io::Error::from_raw_os_error(libc::ENOSPC)),
            Some(limit) => buf.len().min((limit - self.written) as usize),
            None => buf.len(),
        };
        let n = self.inner.write(&buf[..allowed])?;
        self.written += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// How many temporary paths this process has named (each name is used once).
static TEMPORARIES: AtomicU64 = AtomicU64::new(0);

/// A temporary path beside `path`, unique in this process, with the same extension
/// (so a writer that picks a format by extension still does). The name is
/// predictable: whatever writes it must create it new (`create_new`, which follows no
/// link planted there), as [`write_atomic`] does.
pub(crate) fn temp_path_for(path: &Path) -> PathBuf {
    temp_path_numbered(path, TEMPORARIES.fetch_add(1, Ordering::Relaxed))
}

fn temp_path_numbered(path: &Path, n: u64) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let ext = path
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.tmp-{}-{n}{ext}", std::process::id()))
}

/// The temporary paths the next `count` writes beside `path` would use (a test plants
/// links there).
#[cfg(test)]
pub(crate) fn next_temp_paths(path: &Path, count: u64) -> Vec<PathBuf> {
    let next = TEMPORARIES.load(Ordering::Relaxed);
    (next..next + count).map(|n| temp_path_numbered(path, n)).collect()
}

/// Writes `bytes` to `path` atomically: the old file (if any) stays until the new one
/// is complete and on disk.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), FileError> {
    replace_with(path, |tmp| {
        let file = OpenOptions::new().write(true).create_new(true).open(tmp)?;
        let mut w = Limited {
            inner: file,
            written: 0,
            limit: injected_limit(),
        };
        w.write_all(bytes)?;
        w.flush()
    })
}

/// Puts a file in place by `produce` writing it at a temporary path beside `path`;
/// then fsync, rename over `path`, fsync the folder. On any error the temporary file
/// is removed and `path` is untouched.
pub(crate) fn replace_with<E: Into<Box<dyn std::error::Error + Send + Sync>>>(
    path: &Path,
    produce: impl FnOnce(&Path) -> Result<(), E>,
) -> Result<(), FileError> {
    let tmp = temp_path_for(path);
    let done = produce(&tmp)
        .map_err(|e| io::Error::other(e.into()))
        .and_then(|()| {
            // A writer that swallowed an error (a full disk) leaves a short file: the
            // injected limit checks that here too.
            let len = fs::metadata(&tmp)?.len();
            if injected_limit().is_some_and(|l| len > l) {
                return Err(io::Error::from_raw_os_error(libc::ENOSPC));
            }
            File::open(&tmp)?.sync_all()
        })
        .and_then(|()| fs::rename(&tmp, path));
    if let Err(e) = done {
        let _ = fs::remove_file(&tmp);
        return Err(FileError::io(path, e));
    }
    if let Some(dir) = path.parent() {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}

/// What kind of file `meta` describes, for an error.
fn kind_of(meta: &fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt as _;
    let t = meta.file_type();
    match () {
        _ if t.is_dir() => "a directory",
        _ if t.is_fifo() => "a FIFO",
        _ if t.is_char_device() => "a character device",
        _ if t.is_block_device() => "a block device",
        _ if t.is_socket() => "a socket",
        _ => "not a file",
    }
}

/// Opens `path` (links followed) for reading if it is a regular file. The open does not
/// block (`O_NONBLOCK`: a FIFO with no writer would hang it) and the kind is checked on
/// the open file, so nothing is read from a device or a FIFO.
pub(crate) fn open_regular(path: &Path, what: &'static str) -> Result<File, FileError> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| FileError::io(path, e))?;
    let meta = file.metadata().map_err(|e| FileError::io(path, e))?;
    if !meta.is_file() {
        return Err(FileError::NotRegular {
            path: path.display().to_string(),
            what,
            kind: kind_of(&meta),
        });
    }
    Ok(file)
}

/// Reads `path` whole if it is a regular file ([`open_regular`]) of at most `cap_bytes`
/// bytes; `what` names the kind of file in the error ("a result file").
pub(crate) fn read_capped(path: &Path, cap_bytes: u64, what: &'static str) -> Result<Vec<u8>, FileError> {
    let file = open_regular(path, what)?;
    let mut out = Vec::new();
    file.take(cap_bytes + 1)
        .read_to_end(&mut out)
        .map_err(|e| FileError::io(path, e))?;
    if out.len() as u64 > cap_bytes {
        return Err(FileError::TooLarge {
            path: path.display().to_string(),
            what,
            cap_bytes,
        });
    }
    Ok(out)
}

/// [`read_capped`] as UTF-8 text.
pub fn read_capped_text(path: &Path, cap_bytes: u64, what: &'static str) -> Result<String, FileError> {
    let bytes = read_capped(path, cap_bytes, what)?;
    String::from_utf8(bytes).map_err(|e| FileError::io(path, io::Error::new(io::ErrorKind::InvalidData, e)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("s3sweep-files-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn atomic_writes_replace_whole_files_and_leave_no_temporary() {
        let d = dir("atomic");
        let p = d.join("r.json");
        write_atomic(&p, b"first").unwrap();
        write_atomic(&p, b"second").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"second");
        // A producer that fails leaves the old file and no temporary.
        let err = replace_with(&p, |tmp| {
            fs::write(tmp, b"half")?;
            Err::<(), _>(io::Error::other("disk full"))
        })
        .unwrap_err();
        assert!(err.to_string().contains("disk full"), "{err}");
        assert_eq!(fs::read(&p).unwrap(), b"second");
        assert_eq!(fs::read_dir(&d).unwrap().count(), 1);
        assert!(temp_path_for(&p).to_string_lossy().ends_with(".json"));
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn reads_stop_at_the_cap() {
        let d = dir("capped");
        let p = d.join("big");
        fs::write(&p, vec![b'x'; 1001]).unwrap();
        assert_eq!(read_capped(&p, 1001, "a test file").unwrap().len(), 1001);
        let err = read_capped(&p, 1000, "a test file").unwrap_err();
        assert!(err.to_string().contains("larger than 1000 bytes"), "{err}");
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn devices_and_fifos_are_refused_at_once() {
        let d = dir("irregular");
        let fifo = d.join("r.json");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let started = std::time::Instant::now();
        let err = read_capped(&fifo, 4096, "a test file").unwrap_err();
        assert!(err.to_string().contains("is a FIFO, not a regular file"), "{err}");
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
        let err = read_capped(Path::new("/dev/zero"), 4096, "a test file").unwrap_err();
        assert!(err.to_string().contains("a character device"), "{err}");
        let err = read_capped(&d, 4096, "a test file").unwrap_err();
        assert!(err.to_string().contains("a directory"), "{err}");
        fs::remove_dir_all(&d).unwrap();
    }
}
