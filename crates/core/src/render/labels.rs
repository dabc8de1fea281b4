//! Labels on the plot's charts: where each goes ([`place`]: beside its point, at the
//! first of a few candidate spots that overlaps no label already placed and no
//! marker, stays inside the plotting area, and covers as little of the data as it
//! can), the knee markers and labels drawn that way ([`draw_knees`]), the
//! figure's one legend ([`draw_legend`]), which sits above the panels so it covers no
//! line, text fitted to a width ([`fit_lines`]: wrapped, then cut with an ellipsis)
//! and the labels of vertical marks stacked so none overlaps ([`place_marks`]).

use plotters::coord::ranged1d::Ranged;
use plotters::coord::Shift;
use plotters::prelude::*;

/// A rectangle in pixels, `x0..x1` by `y0..y1` (y down).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rect {
    pub x0: i32,
    pub y0: i32,
    pub x1: i32,
    pub y1: i32,
}

impl Rect {
    pub(crate) fn overlaps(&self, o: &Rect) -> bool {
        self.x0 < o.x1 && o.x0 < self.x1 && self.y0 < o.y1 && o.y0 < self.y1
    }

    fn contains(&self, (x, y): (i32, i32)) -> bool {
        (self.x0..=self.x1).contains(&x) && (self.y0..=self.y1).contains(&y)
    }

    pub(crate) fn within(&self, o: &Rect) -> bool {
        self.x0 >= o.x0 && self.x1 <= o.x1 && self.y0 >= o.y0 && self.y1 <= o.y1
    }
}

/// A label to place: the point it belongs to and its size, pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Label {
    pub at: (i32, i32),
    pub size: (i32, i32),
}

/// Room between a point and its label: more than a knee marker's radius.
const GAP: i32 = 16;

/// The spots tried for a label of size `(w, h)`, as top-left offsets from its point,
/// in order of preference: above, below, right, left, the four corners, then further
/// above and below.
fn candidates((w, h): (i32, i32)) -> [(i32, i32); 10] {
    [
        (-w / 2, -GAP - h),
        (-w / 2, GAP),
        (GAP, -h / 2),
        (-GAP - w, -h / 2),
        (GAP / 2, -GAP - h),
        (-w - GAP / 2, -GAP - h),
        (GAP / 2, GAP),
        (-w - GAP / 2, GAP),
        (-w / 2, -2 * GAP - 2 * h),
        (-w / 2, 2 * GAP + h),
    ]
}

/// Top-left offsets (from each label's point) for `labels`, placed in order. A spot
/// costs 1,000 per label or marker (centre, radius) it overlaps and for leaving
/// `area`, plus one per `data` pixel it covers; the cheapest wins, the earlier on a
/// tie.
pub(crate) fn place(
    labels: &[Label],
    markers: &[((i32, i32), i32)],
    data: &[(i32, i32)],
    area: Rect,
) -> Vec<(i32, i32)> {
    let marker_boxes: Vec<Rect> = markers
        .iter()
        .map(|&((x, y), r)| Rect {
            x0: x - r,
            y0: y - r,
            x1: x + r,
            y1: y + r,
        })
        .collect();
    let mut placed: Vec<Rect> = Vec::new();
    let mut offsets = Vec::new();
    for label in labels {
        let (w, h) = label.size;
        let mut best: Option<(usize, (i32, i32), Rect)> = None;
        for (dx, dy) in candidates(label.size) {
            let rect = Rect {
                x0: label.at.0 + dx,
                y0: label.at.1 + dy,
                x1: label.at.0 + dx + w,
                y1: label.at.1 + dy + h,
            };
            let mut cost = 1000 * placed.iter().filter(|p| p.overlaps(&rect)).count();
            cost += 1000 * marker_boxes.iter().filter(|m| m.overlaps(&rect)).count();
            if !rect.within(&area) {
                cost += 1000;
            }
            cost += data.iter().filter(|p| rect.contains(**p)).count();
            if best.as_ref().is_none_or(|b| cost < b.0) {
                best = Some((cost, (dx, dy), rect));
            }
        }
        let (_, offset, rect) = best.expect("there are candidates");
        placed.push(rect);
        offsets.push(offset);
    }
    offsets
}

/// Points every `step` pixels along the polyline through `points`, for [`place`] to
/// keep labels off the lines.
pub(crate) fn sample_line(points: &[(i32, i32)], step: i32) -> Vec<(i32, i32)> {
    let mut out = Vec::new();
    for w in points.windows(2) {
        let ((x0, y0), (x1, y1)) = (w[0], w[1]);
        let length = (((x1 - x0) as f64).hypot((y1 - y0) as f64) / f64::from(step.max(1))).ceil() as i32;
        for i in 0..=length.max(1) {
            let t = f64::from(i) / f64::from(length.max(1));
            out.push((
                x0 + (f64::from(x1 - x0) * t).round() as i32,
                y0 + (f64::from(y1 - y0) * t).round() as i32,
            ));
        }
    }
    if points.len() == 1 {
        out.push(points[0]);
    }
    out
}

/// Font of the knee labels.
const KNEE_FONT: (&str, i32) = ("sans-serif", 17);

/// The size of `text` in `font`, pixels (an estimate if the font cannot say).
pub(crate) fn text_size(text: &str, font: (&str, i32)) -> (i32, i32) {
    match font.into_font().box_size(text) {
        Ok((w, h)) => (w as i32, h as i32),
        Err(_) => (text.len() as i32 * font.1 * 6 / 10, font.1 + 2),
    }
}

/// `text` cut to at most `width` pixels in `font`, ending in an ellipsis when cut.
pub(crate) fn cut_to(text: &str, font: (&str, i32), width: i32) -> String {
    if text_size(text, font).0 <= width {
        return text.to_string();
    }
    let chars: Vec<char> = text.chars().collect();
    (0..chars.len())
        .rev()
        .map(|n| format!("{}…", chars[..n].iter().collect::<String>().trim_end()))
        .find(|t| text_size(t, font).0 <= width)
        .unwrap_or_default()
}

/// `parts` joined by `sep` into at most `max_lines` lines of at most `width` pixels
/// in `font`: each part goes on the line it fits, else starts the next; a part wider
/// than a line, or one with no line left, cuts the text there with an ellipsis.
pub(crate) fn fit_lines(parts: &[String], sep: &str, font: (&str, i32), width: i32, max_lines: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for part in parts {
        let room_below = lines.len() < max_lines.max(1);
        let Some(last) = lines.last_mut() else {
            lines.push(cut_to(part, font, width));
            continue;
        };
        let joined = format!("{last}{sep}{part}");
        if text_size(&joined, font).0 <= width {
            *last = joined;
        } else if room_below {
            *last = cut_to(&format!("{last}{}", sep.trim_end()), font, width);
            lines.push(cut_to(part, font, width));
        } else {
            *last = cut_to(&format!("{joined} …"), font, width);
            break;
        }
    }
    lines
}

/// Where the labels of vertical marks go: each mark is its line's x and its label's
/// size, pixels. A label sits just right of its line (left of it when the right would
/// leave `area`), in the first of `rows` text rows down from the top of `area` where
/// it overlaps no label placed before it; `None` (dropped) when no row has room.
pub(crate) fn place_marks(marks: &[(i32, (i32, i32))], area: Rect, rows: usize) -> Vec<Option<Rect>> {
    let mut placed: Vec<Rect> = Vec::new();
    marks
        .iter()
        .map(|&(x, (w, h))| {
            let x0 = if x + 3 + w <= area.x1 { x + 3 } else { x - 3 - w };
            let spot = (0..rows as i32)
                .map(|row| Rect {
                    x0,
                    y0: area.y0 + 2 + row * (h + 2),
                    x1: x0 + w,
                    y1: area.y0 + 2 + row * (h + 2) + h,
                })
                .find(|r| r.within(&area) && !placed.iter().any(|p| p.overlaps(r)));
            if let Some(r) = spot {
                placed.push(r);
            }
            spot
        })
        .collect()
}

/// The chart's plotting area in pixels, the box labels must stay in.
pub(crate) fn plot_area<DB: DrawingBackend, X: Ranged<ValueType = f64>, Y: Ranged<ValueType = f64>>(
    chart: &ChartContext<'_, DB, Cartesian2d<X, Y>>,
) -> Rect {
    let (xs, ys) = chart.plotting_area().get_pixel_range();
    Rect {
        x0: xs.start,
        y0: ys.start,
        x1: xs.end,
        y1: ys.end,
    }
}

/// Circles each curve's knee (`(colour, workers, point)`) and labels it `knee N`,
/// each label where it overlaps no other label or marker and as little of `lines`
/// (every curve's points) as it can.
pub(crate) fn draw_knees<DB: DrawingBackend, X: Ranged<ValueType = f64>, Y: Ranged<ValueType = f64>>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    knees: &[(RGBColor, u32, (f64, f64))],
    lines: &[Vec<(f64, f64)>],
) -> Result<(), String> {
    let area = plot_area(chart);
    let data: Vec<(i32, i32)> = lines
        .iter()
        .flat_map(|l| sample_line(&l.iter().map(|p| chart.backend_coord(p)).collect::<Vec<_>>(), 3))
        .collect();
    let texts: Vec<String> = knees.iter().map(|(_, k, _)| format!("knee {k}")).collect();
    let wanted: Vec<Label> = knees
        .iter()
        .zip(&texts)
        .map(|((_, _, at), text)| Label {
            at: chart.backend_coord(at),
            size: text_size(text, KNEE_FONT),
        })
        .collect();
    let markers: Vec<((i32, i32), i32)> = wanted.iter().map(|l| (l.at, 14)).collect();
    let offsets = place(&wanted, &markers, &data, area);
    for (((col, _, at), text), offset) in knees.iter().zip(texts).zip(offsets) {
        let col = *col;
        chart
            .draw_series([EmptyElement::at(*at)
                + Circle::new((0, 0), 12, col.stroke_width(3))
                + Text::new(text, offset, KNEE_FONT.into_font().color(&col))])
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// The figure's legend, centred on one line: a colour sample and a text per entry.
pub(crate) fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[(RGBColor, String)],
) -> Result<(), String> {
    let font = ("sans-serif", 17);
    let (sample, gap) = (34, 36);
    let total: i32 = entries
        .iter()
        .map(|(_, e)| sample + text_size(e, font).0 + gap)
        .sum::<i32>()
        - gap;
    let (width, height) = area.dim_in_pixel();
    let mut x = ((width as i32 - total) / 2).max(4);
    let y = height as i32 / 2;
    for (col, entry) in entries {
        area.draw(&PathElement::new(
            vec![(x, y), (x + sample - 8, y)],
            col.stroke_width(4),
        ))
        .map_err(|e| e.to_string())?;
        let (w, h) = text_size(entry, font);
        area.draw(&Text::new(entry.clone(), (x + sample, y - h / 2), font.into_font()))
            .map_err(|e| e.to_string())?;
        x += sample + w + gap;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const AREA: Rect = Rect {
        x0: 0,
        y0: 0,
        x1: 600,
        y1: 400,
    };

    fn rect_of(l: &Label, (dx, dy): (i32, i32)) -> Rect {
        Rect {
            x0: l.at.0 + dx,
            y0: l.at.1 + dy,
            x1: l.at.0 + dx + l.size.0,
            y1: l.at.1 + dy + l.size.1,
        }
    }

    #[test]
    fn labels_of_close_points_do_not_overlap_each_other_or_the_markers() {
        // Two knees at the same worker count, 30 px apart (the wall-time panel).
        let labels = [
            Label {
                at: (500, 200),
                size: (80, 20),
            },
            Label {
                at: (500, 230),
                size: (80, 20),
            },
        ];
        let markers = [((500, 200), 12), ((500, 230), 12)];
        let offsets = place(&labels, &markers, &[], AREA);
        let a = rect_of(&labels[0], offsets[0]);
        let b = rect_of(&labels[1], offsets[1]);
        assert!(!a.overlaps(&b), "{a:?} {b:?}");
        for (m, r) in markers {
            let mb = Rect {
                x0: m.0 - r,
                y0: m.1 - r,
                x1: m.0 + r,
                y1: m.1 + r,
            };
            assert!(!a.overlaps(&mb) && !b.overlaps(&mb), "{a:?} {b:?} {mb:?}");
        }
        assert!(a.within(&AREA) && b.within(&AREA));
    }

    #[test]
    fn labels_stay_inside_and_off_the_data() {
        // A point at the top edge: the label goes below, not out of the area.
        let top = Label {
            at: (300, 5),
            size: (80, 20),
        };
        let o = place(&[top], &[], &[], AREA);
        assert!(rect_of(&top, o[0]).within(&AREA), "{o:?}");
        // A line right above the point: the label avoids it.
        let line = sample_line(&[(200, 170), (400, 170)], 4);
        assert!(line.len() > 40);
        let mid = Label {
            at: (300, 200),
            size: (80, 20),
        };
        let o = place(&[mid], &[], &line, AREA);
        assert!(!line.iter().any(|p| rect_of(&mid, o[0]).contains(*p)), "{o:?}");
        assert_eq!(sample_line(&[(1, 1)], 4), vec![(1, 1)]);
    }
    #[test]
    fn text_is_wrapped_then_cut_to_its_width() {
        let font = ("sans-serif", 20);
        let parts: Vec<String> = (1..=8).map(|i| format!("express-like best {i}28 w")).collect();
        let lines = fit_lines(&parts, ", ", font, 500, 2);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines.iter().all(|l| text_size(l, font).0 <= 500), "{lines:?}");
        assert!(lines[0].ends_with(','), "{lines:?}");
        assert!(lines[1].ends_with('…'), "cut, and says so: {lines:?}");
        let short = fit_lines(&parts[..1], ", ", font, 500, 2);
        assert_eq!(short, vec![parts[0].clone()]);
        let cut = cut_to(&"x".repeat(200), font, 100);
        assert!(text_size(&cut, font).0 <= 100 && cut.ends_with('…'), "{cut}");
    }

    #[test]
    fn mark_labels_stack_or_drop_and_never_overlap() {
        // Five labels on lines 4 px apart, the last near the right edge.
        let marks: Vec<(i32, (i32, i32))> = [100, 104, 108, 112, 590].iter().map(|&x| (x, (70, 15))).collect();
        let spots = place_marks(&marks, AREA, 3);
        let placed: Vec<Rect> = spots.iter().flatten().copied().collect();
        assert_eq!(
            placed.len(),
            4,
            "three stacked, the fourth dropped, the last placed: {spots:?}"
        );
        assert!(spots[3].is_none());
        for (i, a) in placed.iter().enumerate() {
            assert!(a.within(&AREA), "{a:?}");
            assert!(placed[i + 1..].iter().all(|b| !a.overlaps(b)), "{placed:?}");
        }
        assert!(spots[4].unwrap().x1 <= 590, "left of its line at the edge: {spots:?}");
    }
}
