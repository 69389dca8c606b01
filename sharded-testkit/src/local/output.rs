//! What a child printed: the JVM's output drained on background threads (a full pipe would
//! stall it), with the last lines kept for error messages.

use std::collections::VecDeque;
use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;

/// How many lines of the JVM's output are kept for error messages.
const OUTPUT_LINES: usize = 50;

/// The last [`OUTPUT_LINES`] lines a child printed, for error messages.
#[derive(Debug, Clone, Default)]
pub(super) struct OutputTail(Arc<Mutex<VecDeque<String>>>);

impl OutputTail {
    /// Reads `stream` line by line on a background thread until EOF (the JVM exiting).
    pub(super) fn follow(
        &self,
        stream: impl Read + Send + 'static,
        name: &'static str,
    ) -> Option<thread::JoinHandle<()>> {
        let tail = self.clone();
        let reader = move || {
            let mut reader = BufReader::new(stream);
            let mut buffer = Vec::new();
            loop {
                buffer.clear();
                match reader.read_until(b'\n', &mut buffer) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        let line = String::from_utf8_lossy(&buffer);
                        let line = line.trim_end_matches(['\r', '\n']);
                        tracing::debug!(target: "sharded_testkit::local::jvm", stream = name, "{line}");
                        tail.push(line.to_owned());
                    }
                }
            }
        };
        let spawned = thread::Builder::new()
            .name(format!("dynamodb-local-{name}"))
            .spawn(reader);
        // Without a reader the pipe may fill up and stall the JVM; the readiness
        // timeout then reports it, so just record why.
        spawned
            .inspect_err(|error| tracing::warn!(%error, "cannot read DynamoDB Local's {name}"))
            .ok()
    }

    pub(super) fn push(&self, line: String) {
        // A poisoned lock only means another reader panicked mid-push; the lines are fine.
        let mut lines = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if lines.len() == OUTPUT_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    pub(super) fn render(&self) -> String {
        let lines = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        render_lines(lines.iter().map(String::as_str))
    }
}

/// The last few lines of a log file, indented, for error messages.
pub(super) fn tail_of_file(path: &Path) -> String {
    let text = fs::read(path)
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        .unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    render_lines(lines[lines.len().saturating_sub(20)..].iter().copied())
}

fn render_lines<'a>(lines: impl Iterator<Item = &'a str>) -> String {
    let rendered: Vec<String> = lines.map(|line| format!("    {line}")).collect();
    if rendered.is_empty() {
        "    (no output)".into()
    } else {
        rendered.join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_tail_keeps_the_last_lines() {
        let tail = OutputTail::default();
        assert_eq!(tail.render(), "    (no output)");
        for i in 0..(OUTPUT_LINES + 5) {
            tail.push(format!("line {i}"));
        }
        let rendered = tail.render();
        assert_eq!(rendered.lines().count(), OUTPUT_LINES);
        assert!(rendered.starts_with("    line 5\n"));
        assert!(rendered.ends_with(&format!("line {}", OUTPUT_LINES + 4)));
    }
}
