//! The advisor's picture: one panel per candidate key, and in it, for each shard, two bars,
//! its share of the documents and its share of the recent inserts. Written by hand: a few
//! rectangles and labels, for which a plotting crate would add more than it saves.

use std::fmt::Write;

use super::{Report, share};

const BAR: usize = 18;
const GAP: usize = 14;
const PLOT_HEIGHT: usize = 120;
const PANEL_HEIGHT: usize = PLOT_HEIGHT + 70;
const LEFT: usize = 50;
const DOCUMENTS: &str = "#4e79a7";
const RECENT: &str = "#e15759";

/// Text safe inside SVG.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

pub(super) fn draw(report: &Report) -> String {
    let group = 2 * BAR + GAP;
    let width = (LEFT + report.shards * group + 40).max(460);
    let height = 60 + report.candidates.len() * PANEL_HEIGHT;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        out,
        r#"<rect width="{width}" height="{height}" fill="white"/>"#
    );
    let _ = writeln!(
        out,
        r#"<text x="10" y="20" font-size="14">Shard-key advisor: {} documents over {} shards</text>"#,
        report.documents, report.shards
    );
    let _ = writeln!(
        out,
        r#"<rect x="10" y="32" width="10" height="10" fill="{DOCUMENTS}"/><text x="24" y="41">documents per shard</text><rect x="170" y="32" width="10" height="10" fill="{RECENT}"/><text x="184" y="41">recent inserts per shard (last {:.0}%)</text>"#,
        100.0 * report.recent
    );
    for (panel, candidate) in report.candidates.iter().enumerate() {
        let top = 60 + panel * PANEL_HEIGHT;
        let base = top + 20 + PLOT_HEIGHT;
        let (_, hot) = candidate.hottest_recent();
        let _ = writeln!(
            out,
            r#"<text x="10" y="{}" font-weight="bold">{}</text><text x="{}" y="{}" text-anchor="end">hottest shard: {:.0}% of recent inserts</text>"#,
            top + 12,
            escape(&candidate.key.to_document().to_string()),
            width - 10,
            top + 12,
            100.0 * hot
        );
        // Axis at 0%, 50% and 100%.
        for (fraction, label) in [(0.0, "0%"), (0.5, "50%"), (1.0, "100%")] {
            let y = base as f64 - fraction * PLOT_HEIGHT as f64;
            let _ = writeln!(
                out,
                r##"<line x1="{LEFT}" x2="{}" y1="{y:.1}" y2="{y:.1}" stroke="#ccc"/><text x="{}" y="{:.1}" text-anchor="end" fill="#666">{label}</text>"##,
                width - 20,
                LEFT - 6,
                y + 4.0
            );
        }
        let documents: u64 = candidate.documents.iter().sum();
        let recent: u64 = candidate.recent_inserts.iter().sum();
        for shard in 0..report.shards {
            let x = LEFT + 8 + shard * group;
            for (offset, value, colour) in [
                (0, share(candidate.documents[shard], documents), DOCUMENTS),
                (BAR, share(candidate.recent_inserts[shard], recent), RECENT),
            ] {
                let h = value * PLOT_HEIGHT as f64;
                let _ = writeln!(
                    out,
                    r#"<rect x="{}" y="{:.1}" width="{}" height="{h:.1}" fill="{colour}"><title>shard {shard}: {:.1}%</title></rect>"#,
                    x + offset,
                    base as f64 - h,
                    BAR - 2,
                    100.0 * value
                );
            }
            let _ = writeln!(
                out,
                r#"<text x="{}" y="{}" text-anchor="middle">{shard}</text>"#,
                x + BAR,
                base + 16
            );
        }
    }
    out.push_str("</svg>\n");
    out
}
