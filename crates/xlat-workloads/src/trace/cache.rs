//! The trace cache: a trace in a slow container (xz or gzip, ChampSim's 64-byte records,
//! lackey's text) is decoded once into a native copy, and every later run on it reads the copy.
//!
//! A copy is keyed by what determines its references: the SHA-256 of the input file's bytes,
//! the format it is read as (with `+fetch` or not), the native format's version and
//! [`DECODERS`]. So a changed input has a new key (never a stale copy), and a copy appears
//! under its key only once it is complete: it is written to a temporary file in the cache
//! directory, flushed to disk, and renamed, and its entry file (what it is a copy of, its
//! size) is renamed into place after it. A copy whose size is not its entry's is not served.
//!
//! ```text
//! DIR/<sha256/128 bits>-<format>-v<native version>.<decoders>.xtr    the native copy
//! DIR/<same>.entry                                                    source, format, refs, bytes
//! ```
//!
//! The cache is off until [`set_dir`] names a directory (the Python package does, from
//! `XLAT_CACHE_DIR` or the user's cache directory). Only regular files are cached (a pipe
//! cannot be read twice), and native traces are read as they are.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Mutex, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};
use xlat_core::SourceError;

use super::{io_err, FormatSpec};

/// The decoders' generation. Bump it whenever a decoder (ChampSim, lackey) changes the
/// references it makes of the same bytes: copies made by the older decoders are then under
/// other keys and never served again (`xlat cache --clear` removes them).
pub const DECODERS: u32 = 1;

const COPY: &str = "xtr";
const ENTRY: &str = "entry";

static DIR: RwLock<Option<PathBuf>> = RwLock::new(None);

/// Turn the cache on (in `dir`, created when first written) or off (`None`) for this process.
pub fn set_dir(dir: Option<PathBuf>) {
    *DIR.write().unwrap_or_else(|e| e.into_inner()) = dir;
}

/// The cache's directory, if it is on.
pub fn dir() -> Option<PathBuf> {
    DIR.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// One cached copy, as its entry file describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub key: String,
    /// The native copy.
    pub copy: PathBuf,
    /// The file it was made from (when it was made; the key is its content, not its name).
    pub source: String,
    /// The format the source was read as, e.g. `champsim` or `lackey+fetch`.
    pub format: String,
    pub source_bytes: u64,
    /// References in the copy.
    pub refs: u64,
    /// The copy's size in bytes.
    pub bytes: u64,
    /// When it was made, in seconds since the Unix epoch.
    pub created: u64,
}

impl Entry {
    fn encode(&self) -> String {
        // (One field per line; a newline in a path would end its line, so it is escaped.)
        let source = self.source.replace('\\', "\\\\").replace('\n', "\\n");
        format!(
            "source={source}\nformat={}\nsource_bytes={}\nrefs={}\nbytes={}\ncreated={}\n",
            self.format, self.source_bytes, self.refs, self.bytes, self.created
        )
    }

    fn decode(key: &str, copy: PathBuf, text: &str) -> Option<Entry> {
        let mut e = Entry { key: key.to_string(), copy, source: String::new(), format: String::new(), source_bytes: 0, refs: 0, bytes: 0, created: 0 };
        let mut seen = 0;
        for line in text.lines() {
            let (k, v) = line.split_once('=')?;
            match k {
                "source" => e.source = v.replace("\\n", "\n").replace("\\\\", "\\"),
                "format" => e.format = v.to_string(),
                "source_bytes" => e.source_bytes = v.parse().ok()?,
                "refs" => e.refs = v.parse().ok()?,
                "bytes" => e.bytes = v.parse().ok()?,
                "created" => e.created = v.parse().ok()?,
                _ => continue,
            }
            seen += 1;
        }
        (seen == 6).then_some(e)
    }
}

/// File identity for the in-process hash memo: a file whose device, inode, size and
/// modification time are unchanged is not hashed again by the same process.
type Stamp = (u64, u64, u64, i128);

fn stamp(meta: &fs::Metadata) -> Stamp {
    use std::os::unix::fs::MetadataExt;
    let mtime = meta.modified().ok().and_then(|t| t.duration_since(UNIX_EPOCH).ok()).map_or(-1, |d| d.as_nanos() as i128);
    (meta.dev(), meta.ino(), meta.len(), mtime)
}

static HASHES: Mutex<Option<HashMap<(PathBuf, Stamp), String>>> = Mutex::new(None);

/// The first 128 bits of the SHA-256 of `path`'s bytes, in hex.
fn content_hash(path: &str, meta: &fs::Metadata, stop: &AtomicBool) -> Result<String, SourceError> {
    let memo_key = (PathBuf::from(path), stamp(meta));
    if let Some(h) = HASHES.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert_with(HashMap::new).get(&memo_key) {
        return Ok(h.clone());
    }
    let mut f = File::open(path).map_err(|e| io_err(path, e))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(SourceError::Io { path: path.to_string(), what: "interrupted".into() });
        }
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => hasher.update(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io_err(path, e)),
        }
    }
    let digest = hasher.finalize();
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    HASHES.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert_with(HashMap::new).insert(memo_key, hex.clone());
    Ok(hex)
}

fn spec_name(format: FormatSpec) -> String {
    format!("{}{}", format.format.name(), if format.fetch { "+fetch" } else { "" })
}

/// The cache key of `path` read as `format`.
pub fn key(path: &str, format: FormatSpec, stop: &AtomicBool) -> Result<String, SourceError> {
    let meta = fs::metadata(path).map_err(|e| io_err(path, e))?;
    Ok(format!("{}-{}-v{}.{}", content_hash(path, &meta, stop)?, spec_name(format), super::VERSION, DECODERS))
}

fn dir_err(dir: &Path, what: impl std::fmt::Display) -> SourceError {
    SourceError::Io { path: dir.to_string_lossy().into_owned(), what: format!("trace cache: {what}") }
}

/// The entry under `key`, if it is complete: its entry file parses and its copy has the size
/// the entry says.
fn lookup(dir: &Path, key: &str) -> Option<Entry> {
    let copy = dir.join(format!("{key}.{COPY}"));
    let text = fs::read_to_string(dir.join(format!("{key}.{ENTRY}"))).ok()?;
    let e = Entry::decode(key, copy, &text)?;
    (fs::metadata(&e.copy).ok()?.len() == e.bytes).then_some(e)
}

/// A temporary name in `dir` no other process or thread uses.
pub(crate) fn temp_path(dir: &Path, key: &str, ext: &str) -> PathBuf {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    dir.join(format!(".{key}.{}.{n}.{nanos}.{ext}.tmp", std::process::id()))
}

/// Removes a temporary file unless disarmed: an error or an interrupt leaves nothing behind.
pub(crate) struct TempFile(pub(crate) Option<PathBuf>);

impl Drop for TempFile {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = fs::remove_file(p);
        }
    }
}

/// The native copy of `path` (a regular file in a format other than native) read as
/// `format`: from the cache in `dir`, or decoded now (stopping once `stop` is set). Returns the
/// entry and whether it was made by this call.
pub fn native_copy(dir: &Path, path: &str, format: FormatSpec, stop: &AtomicBool) -> Result<(Entry, bool), SourceError> {
    let key = key(path, format, stop)?;
    if let Some(e) = lookup(dir, &key) {
        return Ok((e, false));
    }
    fs::create_dir_all(dir).map_err(|e| dir_err(dir, e))?;
    let tmp = TempFile(Some(temp_path(dir, &key, COPY)));
    let tmp_path = tmp.0.clone().expect("set above");
    let mut src = super::TraceSource::open_direct(&[path.to_string()], Some(format))?;
    // (No description and no regions: a ChampSim or lackey trace has none, and the source
    // that reads the copy describes it as the original.)
    let refs = super::record_as(&mut src, &tmp_path, super::Format::Native, None, "", stop)?;
    let tmp_str = tmp_path.to_string_lossy().into_owned();
    let f = File::open(&tmp_path).map_err(|e| io_err(&tmp_str, e))?;
    f.sync_all().map_err(|e| io_err(&tmp_str, e))?;
    let bytes = f.metadata().map_err(|e| io_err(&tmp_str, e))?.len();
    let source_bytes = fs::metadata(path).map_err(|e| io_err(path, e))?.len();
    let created = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let entry = Entry {
        key: key.clone(),
        copy: dir.join(format!("{key}.{COPY}")),
        source: path.to_string(),
        format: spec_name(format),
        source_bytes,
        refs,
        bytes,
        created,
    };
    fs::rename(&tmp_path, &entry.copy).map_err(|e| dir_err(dir, e))?;
    drop(tmp);
    // The entry last: until it is in place, the copy is not served.
    let etmp = TempFile(Some(temp_path(dir, &key, ENTRY)));
    let etmp_path = etmp.0.clone().expect("set above");
    let mut ef = File::create(&etmp_path).map_err(|e| dir_err(dir, e))?;
    ef.write_all(entry.encode().as_bytes()).and_then(|_| ef.sync_all()).map_err(|e| dir_err(dir, e))?;
    fs::rename(&etmp_path, dir.join(format!("{key}.{ENTRY}"))).map_err(|e| dir_err(dir, e))?;
    drop(etmp);
    Ok((entry, true))
}

/// Every complete entry in `dir`, oldest first.
pub fn entries(dir: &Path) -> Result<Vec<Entry>, SourceError> {
    let rd = match fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(dir_err(dir, e)),
    };
    let mut out = Vec::new();
    for d in rd {
        let name = d.map_err(|e| dir_err(dir, e))?.file_name().to_string_lossy().into_owned();
        if let Some(key) = name.strip_suffix(&format!(".{ENTRY}")).filter(|_| !name.starts_with('.')) {
            if let Some(e) = lookup(dir, key) {
                out.push(e);
            }
        }
    }
    out.sort_by(|a, b| (a.created, &a.key).cmp(&(b.created, &b.key)));
    Ok(out)
}

/// Remove every copy, entry, cached graph (`kernels::graph::cache`) and leftover temporary
/// file from `dir` (only the files the cache makes: other files are left alone). Returns the files and bytes removed.
pub fn clear(dir: &Path) -> Result<(u64, u64), SourceError> {
    let rd = match fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((0, 0)),
        Err(e) => return Err(dir_err(dir, e)),
    };
    let (mut files, mut bytes) = (0, 0);
    for d in rd {
        let d = d.map_err(|e| dir_err(dir, e))?;
        let name = d.file_name().to_string_lossy().into_owned();
        let graph = name.starts_with("graph-") && name.ends_with(&format!(".{}", crate::kernels::graph::cache::EXT));
        let ours = name.ends_with(&format!(".{COPY}")) || name.ends_with(&format!(".{ENTRY}")) || graph || (name.starts_with('.') && name.ends_with(".tmp"));
        if !ours || !d.file_type().map(|t| t.is_file()).unwrap_or(false) {
            continue;
        }
        let len = d.metadata().map(|m| m.len()).unwrap_or(0);
        fs::remove_file(d.path()).map_err(|e| dir_err(dir, e))?;
        files += 1;
        bytes += len;
    }
    Ok((files, bytes))
}

/// The cached copy of `path` read as `forced` (or as its content says), made now if there is
/// none; `None` when the cache is off, `path` is not a regular file, or it is native already.
/// Returns the entry and whether this call made it.
pub fn ensure(path: &str, forced: Option<FormatSpec>, stop: &AtomicBool) -> Result<Option<(Entry, bool)>, SourceError> {
    let Some(dir) = dir() else { return Ok(None) };
    if !fs::metadata(path).map(|m| m.is_file()).unwrap_or(false) {
        return Ok(None);
    }
    let (_, f, _) = super::open_decoder(path, super::open_file(path)?, forced)?;
    if f == super::Format::Native {
        return Ok(None);
    }
    native_copy(&dir, path, FormatSpec { format: f, fetch: forced.is_some_and(|s| s.fetch) }, stop).map(Some)
}
