//! Draws BENCHMARKS.md's summary chart (`docs/benchmarks.png`) from the ratios recorded in
//! `benches/summary.csv`: not a measurement itself, so the chart can never disagree with the
//! table it illustrates. Each row's measurement has its own bench and command in BENCHMARKS.md.
//!
//! ```text
//! cargo bench --bench summary_chart
//! ```

use plotters::prelude::*;

struct Row {
    panel: String,
    label: String,
    measured: f64,
    target: f64,
}

fn rows() -> Result<Vec<Row>, Box<dyn std::error::Error>> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/summary.csv");
    let text = std::fs::read_to_string(path)?;
    let mut rows = Vec::new();
    for (number, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split(',').collect();
        let [panel, label, measured, target] = fields[..] else {
            return Err(format!("{path}:{}: expected 4 comma-separated fields", number + 1).into());
        };
        rows.push(Row {
            panel: panel.to_string(),
            label: label.to_string(),
            measured: measured.parse()?,
            target: target.parse()?,
        });
    }
    Ok(rows)
}

fn register_font() -> Result<(), Box<dyn std::error::Error>> {
    let font = [
        "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
        "/usr/share/fonts/TTF/DejaVuSans.ttf",
    ]
    .iter()
    .find_map(|p| std::fs::read(p).ok())
    .ok_or("no DejaVuSans.ttf found for the chart's text (install fonts-dejavu-core)")?;
    plotters::style::register_font(
        "sans-serif",
        FontStyle::Normal,
        Box::leak(font.into_boxed_slice()),
    )
    .map_err(|_| "DejaVuSans.ttf is not a readable font")?;
    Ok(())
}

/// One panel: a horizontal bar per row, its target as a black tick.
fn panel(
    area: &DrawingArea<BitMapBackend<'_>, plotters::coord::Shift>,
    caption: &str,
    rows: &[&Row],
    higher_is_better: bool,
) -> Result<(), Box<dyn std::error::Error>> {
    let max = rows
        .iter()
        .map(|r| r.measured.max(r.target))
        .fold(0.0, f64::max)
        * 1.15;
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(30)
        .y_label_area_size(390)
        .build_cartesian_2d(0f64..max, -0.5f64..(rows.len() as f64 - 0.5))?;
    chart
        .configure_mesh()
        .y_labels(rows.len())
        .y_label_formatter(&|y| {
            let i = y.round();
            if (y - i).abs() > 1e-6 || i < 0.0 {
                return String::new();
            }
            rows.get(i as usize)
                .map(|r| r.label.clone())
                .unwrap_or_default()
        })
        .x_label_formatter(&|x| format!("{x:.1}x"))
        .label_style(("sans-serif", 14))
        .disable_y_mesh()
        .draw()?;
    let pass = RGBColor(30, 140, 60);
    let miss = RGBColor(200, 40, 40);
    for (i, row) in rows.iter().enumerate() {
        let y = i as f64;
        let met = if higher_is_better {
            row.measured >= row.target
        } else {
            row.measured <= row.target
        };
        let color = if met { pass } else { miss };
        chart.draw_series(std::iter::once(Rectangle::new(
            [(0.0, y - 0.32), (row.measured, y + 0.32)],
            color.filled(),
        )))?;
        chart.draw_series(std::iter::once(PathElement::new(
            vec![(row.target, y - 0.42), (row.target, y + 0.42)],
            BLACK.stroke_width(3),
        )))?;
        chart.draw_series(std::iter::once(Text::new(
            format!("{:.2}x", row.measured),
            (row.measured + max * 0.01, y + 0.12),
            ("sans-serif", 14),
        )))?;
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // `cargo bench` passes `--bench`; this binary takes no options.
    register_font()?;
    let rows = rows()?;
    let speedups: Vec<&Row> = rows.iter().filter(|r| r.panel == "speedup").collect();
    let costs: Vec<&Row> = rows.iter().filter(|r| r.panel == "cost").collect();
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/benchmarks.png");
    let root = BitMapBackend::new(path, (1100, 640)).into_drawing_area();
    root.fill(&WHITE)?;
    let (top, bottom) = root.split_vertically(300);
    panel(
        &top,
        "Faster than the naive way (x; black tick = target; green = met)",
        &speedups,
        true,
    )?;
    panel(
        &bottom,
        "Cost against hand-written code or the physical limit (1.0x = equal; lower is better)",
        &costs,
        false,
    )?;
    root.present()?;
    println!("wrote {path}");
    Ok(())
}
