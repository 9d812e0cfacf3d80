//! Progress of a long tool run: a bar with throughput and time left on a terminal (indicatif),
//! and one plain summary line when output goes elsewhere (a file, a pipe, CI logs).
//!
//! Everything is drawn on standard error, so a tool's data on standard output stays clean.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// What is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Documents,
    Bytes,
}

/// The bar's look: a bar with the count, the rate and the time left when the total is known, a
/// spinner with the count and the rate otherwise.
fn style(known_total: bool, unit: Unit) -> Result<ProgressStyle, indicatif::style::TemplateError> {
    let position = match unit {
        Unit::Documents => "{human_pos}/{human_len} docs ({per_sec})",
        Unit::Bytes => "{bytes}/{total_bytes} ({bytes_per_sec})",
    };
    let template = if known_total {
        format!("{{msg}} [{{bar:30}}] {position}, {{eta}} left")
    } else {
        format!("{{msg}} {{spinner}} {position}")
    };
    Ok(ProgressStyle::with_template(&template)?.progress_chars("=> "))
}

/// One task's progress.
#[derive(Debug)]
pub struct Progress {
    bar: Option<ProgressBar>,
    label: String,
    unit: Unit,
    started: Instant,
    done: u64,
    quiet: bool,
}

/// Whether a bar is drawn: standard error is a terminal and the tool is not quiet. A tool asks
/// before it computes a total that only the bar needs.
pub fn drawn(quiet: bool) -> bool {
    !quiet && std::io::stderr().is_terminal()
}

impl Progress {
    /// A task toward `total` (when known), drawn only when standard error is a terminal.
    pub fn new(label: &str, total: Option<u64>, unit: Unit, quiet: bool) -> Progress {
        let bar = drawn(quiet).then(|| {
            let bar = ProgressBar::with_draw_target(total, ProgressDrawTarget::stderr_with_hz(10));
            // The templates are fixed; the tests check that both parse.
            if let Ok(style) = style(total.is_some(), unit) {
                bar.set_style(style);
            }
            bar.set_message(label.to_owned());
            bar.enable_steady_tick(Duration::from_millis(100));
            bar
        });
        Progress {
            bar,
            label: label.to_owned(),
            unit,
            started: Instant::now(),
            done: 0,
            quiet,
        }
    }

    /// `n` more units done.
    pub fn advance(&mut self, n: u64) {
        self.done += n;
        if let Some(bar) = &self.bar {
            bar.inc(n);
        }
    }

    /// Sets the count reached.
    pub fn set(&mut self, done: u64) {
        self.done = done;
        if let Some(bar) = &self.bar {
            bar.set_position(done);
        }
    }

    /// Ends the task with a summary line: `label: summary (N units in T s, R/s)`.
    pub fn finish(self, summary: &str) {
        let (done, unit) = (self.done, self.unit);
        self.finish_counting(summary, done, unit);
    }

    /// [`Progress::finish`] with the rate of another count than the bar's (documents
    /// imported, where the bar counts bytes read).
    pub fn finish_counting(self, summary: &str, done: u64, unit: Unit) {
        let elapsed = self.started.elapsed();
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        if self.quiet {
            return;
        }
        let seconds = elapsed.as_secs_f64();
        let rate = if seconds > 0.0 {
            done as f64 / seconds
        } else {
            0.0
        };
        let unit = match unit {
            Unit::Documents => "documents",
            Unit::Bytes => "bytes",
        };
        eprintln!(
            "{}: {summary} ({done} {unit} in {seconds:.2} s, {rate:.0} {unit}/s)",
            self.label
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_style_parses() {
        for known in [false, true] {
            for unit in [Unit::Documents, Unit::Bytes] {
                assert!(style(known, unit).is_ok());
            }
        }
    }
}
