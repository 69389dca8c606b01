//! Tests skipped on the selected backend (for a behaviour of DynamoDB it lacks, or because they
//! test DynamoDB Local's harness itself): each said on stderr when it happens, and their count
//! said once more when the process exits (`cargo test` counts a skipped test as passed, so this
//! is where the skips show). The exit hook is this module's only `unsafe`.
#![allow(unsafe_code)]

use std::io::Write;
use std::sync::{Mutex, Once};

use super::behaviour::Behaviour;
use super::names::{BACKEND_ENV, DYNAMODB_LOCAL};

/// The skips of this process.
static SKIPS: Mutex<Vec<Skip>> = Mutex::new(Vec::new());
static INSTALL: Once = Once::new();

struct Skip {
    test: String,
    /// Why, in a few words: the behaviour lacked, or what the test needs.
    why: String,
    backend: String,
}

/// Records that the running test skips on `backend` because it lacks `behaviour`, and says so.
pub(super) fn record(backend: &str, behaviour: Behaviour) {
    let detail = format!(
        "{}, and {}",
        behaviour.what_dynamodb_does(),
        behaviour.what_lacking_backends_do()
    );
    record_why(backend, &format!("{behaviour:?}"), &detail);
}

/// Records that the running test skips on `backend` for `why` (a few words, listed at exit),
/// and says so with `detail`.
///
/// Written to the process's stderr directly: the test harness captures `eprintln!` and shows
/// it only for failing tests, and a skipped test passes.
pub(crate) fn record_why(backend: &str, why: &str, detail: &str) {
    let test = current_test();
    let _ = writeln!(
        std::io::stderr(),
        "sharded-testkit: skipped `{test}` on {backend}: {detail}"
    );
    INSTALL.call_once(install_summary);
    if let Ok(mut skips) = SKIPS.lock() {
        skips.push(Skip {
            test,
            why: why.to_owned(),
            backend: backend.to_owned(),
        });
    }
}

/// The running test's name: libtest runs each test on a thread named after it.
fn current_test() -> String {
    std::thread::current()
        .name()
        .filter(|name| *name != "main")
        .unwrap_or("a test")
        .to_owned()
}

/// The summary printed at exit.
fn summary(skips: &[Skip]) -> Option<String> {
    let first = skips.first()?;
    let tests = if skips.len() == 1 { "test" } else { "tests" };
    let mut text = format!(
        "sharded-testkit: {} {tests} skipped on {} ({BACKEND_ENV}={DYNAMODB_LOCAL} runs them):",
        skips.len(),
        first.backend
    );
    for skip in skips {
        text.push_str(&format!("\n  {}: {}", skip.test, skip.why));
    }
    Some(text)
}

fn print_summary() {
    // `try_lock`: a test thread may hold the lock while the process exits; then say nothing
    // rather than wait forever.
    let Ok(skips) = SKIPS.try_lock() else {
        return;
    };
    if let Some(text) = summary(&skips) {
        let _ = writeln!(std::io::stderr(), "{text}");
    }
}

#[cfg(unix)]
fn install_summary() {
    extern "C" fn at_exit() {
        // Nothing may unwind out of an `atexit` hook.
        let _ = std::panic::catch_unwind(print_summary);
    }
    // SAFETY: registers a function that never unwinds (see above) and touches only
    // statics that live for the whole process. If registration fails (the table is full)
    // the per-skip lines were still printed.
    unsafe {
        libc::atexit(at_exit);
    }
}

/// Off Unix only the per-skip lines are printed.
#[cfg(not(unix))]
fn install_summary() {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_counts_and_names_every_skip() {
        assert_eq!(summary(&[]), None);
        let skip = |test: &str| Skip {
            test: test.into(),
            why: format!("{:?}", Behaviour::BetweenBoundsCheckedInFilters),
            backend: "the embedded DynamoDB".into(),
        };
        let text = summary(&[skip("a::one"), skip("b::two")]).unwrap_or_default();
        assert!(
            text.contains("2 tests skipped on the embedded DynamoDB"),
            "{text}"
        );
        assert!(
            text.contains("a::one: BetweenBoundsCheckedInFilters"),
            "{text}"
        );
        assert!(
            text.contains("SHARDED_TEST_BACKEND=dynamodb-local"),
            "{text}"
        );
    }
}
