//! Small server-rendered charts of a watch's numeric values: an SVG polyline per value, with
//! its low, high and first and last dates, drawn in the page's colours (so dark mode follows)
//! and described in words for screen readers. No JavaScript.

use chrono::NaiveDateTime;
use driftwatch_core::values::{ValueKind, ValueSpec};
use driftwatch_values::{Typed, Values};

/// The drawing's coordinate box; the SVG scales to its container's width.
const WIDTH: f64 = 480.0;
const HEIGHT: f64 = 150.0;
/// Room for the axis labels.
const LEFT: f64 = 84.0;
const RIGHT: f64 = 8.0;
const TOP: f64 = 10.0;
const BOTTOM: f64 = 26.0;

/// One value's chart, ready for the template.
#[derive(Debug, Clone)]
pub struct Chart {
    /// The value's name.
    pub name: String,
    /// Its latest reading, as people read it (`44.00 EUR`).
    pub latest: String,
    /// `x,y x,y ...` of the step line.
    pub line: String,
    /// The readings as dots: (x, y, "44.00 EUR on 2026-12-05 10:00 UTC").
    pub dots: Vec<(String, String, String)>,
    /// The high and low labels with their y.
    pub high: (String, String),
    /// See `high`.
    pub low: (String, String),
    /// The first and last dates.
    pub first: String,
    /// See `first`.
    pub last: String,
    /// The whole chart in words, for `aria-label`.
    pub summary: String,
    /// The view box.
    pub view_box: String,
    /// Coordinates of the plot area's edges, for the axis lines: left, right, top, bottom.
    pub frame: (String, String, String, String),
}

/// A chart for each numeric value (number, money) with at least one reading in `series`
/// (oldest first), in the order of the specs.
pub fn charts(specs: &[ValueSpec], series: &[(NaiveDateTime, Values)]) -> Vec<Chart> {
    specs
        .iter()
        .filter(|spec| matches!(spec.kind, ValueKind::Number | ValueKind::Money))
        .filter_map(|spec| {
            let points: Vec<(NaiveDateTime, &Typed)> =
                series.iter().filter_map(|(at, values)| values.get(&spec.name).map(|v| (*at, v))).collect();
            chart(&spec.name, &points)
        })
        .collect()
}

fn chart(name: &str, points: &[(NaiveDateTime, &Typed)]) -> Option<Chart> {
    let numbers: Vec<(NaiveDateTime, f64, &Typed)> =
        points.iter().filter_map(|(at, v)| v.number().filter(|n| n.is_finite()).map(|n| (*at, n, *v))).collect();
    let (first, last) = (numbers.first()?, numbers.last()?);
    let low = numbers.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let high = numbers.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
    // A flat line sits in the middle; otherwise the range fills the plot.
    let (span_low, span) = if high > low { (low, high - low) } else { (low - 1.0, 2.0) };
    let (t0, t1) = (first.0.and_utc().timestamp() as f64, last.0.and_utc().timestamp() as f64);
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let x = |at: NaiveDateTime| {
        if t1 > t0 { LEFT + (at.and_utc().timestamp() as f64 - t0) / (t1 - t0) * plot_w } else { LEFT + plot_w / 2.0 }
    };
    let y = |n: f64| TOP + (1.0 - (n - span_low) / span) * plot_h;
    let at = |p: f64| format!("{p:.1}");
    // A step line: a value holds until the snapshot that changed it (snapshots are written only
    // on a change), so each reading is reached across at the old level, then up or down.
    let mut line = Vec::with_capacity(numbers.len() * 2);
    for (i, (when, n, _)) in numbers.iter().enumerate() {
        if i > 0 {
            line.push(format!("{},{}", at(x(*when)), at(y(numbers[i - 1].1))));
        }
        line.push(format!("{},{}", at(x(*when)), at(y(*n))));
    }
    let line = line.join(" ");
    let dots = numbers
        .iter()
        .map(|(when, n, value)| {
            (at(x(*when)), at(y(*n)), format!("{} on {}", value.display(), when.format("%Y-%m-%d %H:%M UTC")))
        })
        .collect();
    let unit = last.2.currency().map(|c| format!(" {c}")).unwrap_or_default();
    let shown = |n: f64| match last.2 {
        Typed::Money { .. } => format!("{n:.2}{unit}"),
        _ => Typed::Number { value: n }.display(),
    };
    // Dates for a span of days, times of day (UTC) for a shorter one.
    let short = (last.0 - first.0) < chrono::TimeDelta::days(2);
    let date = |when: NaiveDateTime| when.format(if short { "%b %-d %H:%M" } else { "%b %-d" }).to_string();
    let summary = format!(
        "{name}: {} from {} ({}) to {} ({}); low {}, high {}",
        driftwatch_core::text::count(numbers.len(), "reading"),
        first.2.display(),
        first.0.format("%Y-%m-%d"),
        last.2.display(),
        last.0.format("%Y-%m-%d"),
        shown(low),
        shown(high)
    );
    Some(Chart {
        name: name.to_owned(),
        latest: last.2.display(),
        line,
        dots,
        high: (shown(high), at(y(high) + 4.0)),
        low: (shown(low), at(y(low) + 4.0)),
        first: date(first.0),
        last: date(last.0),
        summary,
        view_box: format!("0 0 {WIDTH} {HEIGHT}"),
        frame: (at(LEFT), at(WIDTH - RIGHT), at(TOP), at(HEIGHT - BOTTOM)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(day: u32) -> NaiveDateTime {
        chrono::NaiveDate::from_ymd_opt(2026, 12, day).and_then(|d| d.and_hms_opt(10, 0, 0)).expect("date")
    }

    fn price(amount: f64) -> Values {
        Values::from([("price".to_owned(), Typed::Money { amount, currency: Some("EUR".into()) })])
    }

    #[test]
    fn a_falling_price_is_drawn_from_high_to_low_and_said_in_words() {
        let spec = ValueSpec { name: "price".into(), kind: ValueKind::Money, ..ValueSpec::default() };
        let series = [(at(1), price(89.99)), (at(2), price(67.0)), (at(4), price(44.0))];
        let charts = charts(&[spec], &series);
        assert_eq!(charts.len(), 1);
        let chart = &charts[0];
        assert_eq!(chart.latest, "44.00 EUR");
        assert_eq!(chart.high.0, "89.99 EUR");
        assert_eq!(chart.low.0, "44.00 EUR");
        let ys: Vec<f64> = chart.dots.iter().map(|d| d.1.parse().expect("y")).collect();
        assert!(ys[0] < ys[1] && ys[1] < ys[2], "SVG y grows downwards: {ys:?}");
        let xs: Vec<f64> = chart.dots.iter().map(|d| d.0.parse().expect("x")).collect();
        assert_eq!((xs[0], xs[2]), (LEFT, WIDTH - RIGHT));
        // Steps: across at the old level, then to the new one.
        let points: Vec<&str> = chart.line.split(' ').collect();
        assert_eq!(points.len(), 5);
        assert_eq!(points[1], format!("{},{}", chart.dots[1].0, chart.dots[0].1));
        assert_eq!(points[2], format!("{},{}", chart.dots[1].0, chart.dots[1].1));
        assert!(chart.summary.contains("3 readings") && chart.summary.contains("low 44.00 EUR"), "{}", chart.summary);
        assert_eq!(chart.dots[1].2, "67.00 EUR on 2026-12-02 10:00 UTC");
        assert_eq!((chart.first.as_str(), chart.last.as_str()), ("Dec 1", "Dec 4"), "days apart: dates");
    }

    #[test]
    fn one_reading_or_a_flat_line_stays_inside_and_text_values_are_not_charted() {
        let price_spec = ValueSpec { name: "price".into(), kind: ValueKind::Money, ..ValueSpec::default() };
        let name_spec = ValueSpec { name: "title".into(), kind: ValueKind::Text, ..ValueSpec::default() };
        let series = [(at(1), price(10.0))];
        let charts = charts(&[price_spec, name_spec], &series);
        assert_eq!(charts.len(), 1);
        let (x, y) = charts[0].line.split_once(',').expect("a point");
        let (x, y): (f64, f64) = (x.parse().expect("x"), y.parse().expect("y"));
        assert!((LEFT..=WIDTH).contains(&x) && (TOP..=HEIGHT - BOTTOM).contains(&y), "{x},{y}");
        assert_eq!(charts[0].first, "Dec 1 10:00", "within a day: the time too");
        assert!(super::charts(&[], &series).is_empty());
    }
}
