//! No orphaned JVMs: the kernel kills a child when the thread that spawned it ends
//! (`PR_SET_PDEATHSIG`, Linux), and an `atexit` hook kills registered children on normal exit
//! (every Unix). The only `unsafe` code of the crate lives here.
#![allow(unsafe_code)]

use std::process::Command;

#[cfg(target_os = "linux")]
use std::io;

/// Makes the kernel SIGKILL the child when the thread spawning it ends (Linux only).
#[cfg(target_os = "linux")]
pub(super) fn die_with_spawning_thread(command: &mut Command) {
    use std::os::unix::process::CommandExt;

    let parent = std::process::id();
    // SAFETY: the closure runs in the forked child before `exec`. It only calls
    // `prctl` and `getppid`, which are async-signal-safe, and builds errors from raw OS
    // codes without allocating.
    unsafe {
        command.pre_exec(move || {
            // Arguments are read as `unsigned long`, so pass them at that width.
            let signal = libc::SIGKILL as libc::c_ulong;
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                signal,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
            ) == -1
            {
                return Err(io::Error::last_os_error());
            }
            // If the parent died before `prctl` took effect, no signal will ever come.
            if u32::try_from(libc::getppid()).ok() != Some(parent) {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

/// Elsewhere only `Drop` and the `atexit` hook stop the child.
#[cfg(not(target_os = "linux"))]
pub(super) fn die_with_spawning_thread(_command: &mut Command) {}

/// Kills registered JVMs from an `atexit` hook, which runs on normal process exit
/// (including `std::process::exit`, which `cargo test` uses) even though statics are
/// never dropped. On Linux this merely duplicates `PR_SET_PDEATHSIG`; elsewhere it is
/// the main guarantee.
#[cfg(unix)]
mod exit_kill {
    use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
    use std::sync::Once;

    /// Set once the process has started exiting.
    static EXITING: AtomicBool = AtomicBool::new(false);

    /// Pids to kill at exit; 0 marks a free slot. Normally one JVM runs at a time, but
    /// a cancelled start may briefly overlap the next one.
    static PIDS: [AtomicI32; 4] = [const { AtomicI32::new(0) }; 4];
    static INSTALL: Once = Once::new();

    extern "C" fn kill_registered() {
        EXITING.store(true, Ordering::SeqCst);
        for slot in &PIDS {
            let pid = slot.swap(0, Ordering::SeqCst);
            if pid > 0 {
                // SAFETY: plain syscall on a pid this process spawned and has not reaped
                // (registrations are removed only after the child has been waited for).
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        }
    }

    /// Whether the process is exiting (and has killed the registered JVMs).
    pub(super) fn is_exiting() -> bool {
        EXITING.load(Ordering::SeqCst)
    }

    /// Keeps `pid` registered until dropped.
    #[derive(Debug)]
    pub(super) struct Registration(Option<(usize, i32)>);

    pub(super) fn register(pid: u32) -> Registration {
        INSTALL.call_once(|| {
            // SAFETY: registers a function that never unwinds. If registration fails
            // (only when the table is full), the other mechanisms still apply.
            unsafe {
                libc::atexit(kill_registered);
            }
        });
        let Ok(pid) = i32::try_from(pid) else {
            return Registration(None);
        };
        let slot = PIDS.iter().position(|slot| {
            slot.compare_exchange(0, pid, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
        });
        Registration(slot.map(|index| (index, pid)))
    }

    impl Drop for Registration {
        fn drop(&mut self) {
            if let Some((index, pid)) = self.0 {
                // Only clear the slot if it still holds our pid.
                let _ = PIDS[index].compare_exchange(pid, 0, Ordering::SeqCst, Ordering::SeqCst);
            }
        }
    }
}

/// Whether the process is exiting, so that a dying JVM is expected.
pub(super) fn process_is_exiting() -> bool {
    #[cfg(unix)]
    let exiting = exit_kill::is_exiting();
    #[cfg(not(unix))]
    let exiting = false;
    exiting
}

/// Keeps a child registered with the `atexit` hook until dropped (a no-op off Unix).
#[derive(Debug)]
pub(super) struct KillAtExit {
    #[cfg(unix)]
    _registration: exit_kill::Registration,
}

/// Has the child `pid` killed when the process exits normally, for as long as the returned
/// guard lives; drop the guard once the child has been waited for.
pub(super) fn kill_at_exit(pid: u32) -> KillAtExit {
    #[cfg(not(unix))]
    let _ = pid;
    KillAtExit {
        #[cfg(unix)]
        _registration: exit_kill::register(pid),
    }
}
