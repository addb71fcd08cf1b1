//! A treemap's layout: rectangles whose areas are in proportion to values, as close to squares
//! as the squarified layout of Bruls, Huizing and van Wijk makes them (rows laid along the
//! shorter side, a row grown while its worst aspect ratio improves).
//!
//! # Example
//!
//! ```
//! use offload::ops::du::treemap::{squarify, Rect};
//!
//! let area = Rect { x: 0.0, y: 0.0, w: 300.0, h: 200.0 };
//! let rects = squarify(&[3, 2, 1], area);
//! let areas: Vec<f64> = rects.iter().map(|r| (r.w * r.h).round()).collect();
//! assert_eq!(areas, [30000.0, 20000.0, 10000.0]);
//! ```

/// A rectangle, in pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rect {
    /// Left edge.
    pub x: f64,
    /// Top edge.
    pub y: f64,
    /// Width.
    pub w: f64,
    /// Height.
    pub h: f64,
}

impl Rect {
    /// The rectangle less `by` on each side (never below nothing).
    pub fn inset(self, by: f64) -> Rect {
        Rect {
            x: self.x + by,
            y: self.y + by,
            w: (self.w - 2.0 * by).max(0.0),
            h: (self.h - 2.0 * by).max(0.0),
        }
    }

    /// The rectangle less `by` at its top (never below nothing).
    pub fn below(self, by: f64) -> Rect {
        let by = by.min(self.h);
        Rect {
            y: self.y + by,
            h: self.h - by,
            ..self
        }
    }
}

/// The rectangles of `values` (most first, for the best shapes) filling `area`, one each, in
/// the order of `values`; a value of 0 gets an empty rectangle.
pub fn squarify(values: &[u64], area: Rect) -> Vec<Rect> {
    let total: f64 = values.iter().map(|&v| v as f64).sum();
    let mut out = vec![
        Rect {
            x: area.x,
            y: area.y,
            w: 0.0,
            h: 0.0,
        };
        values.len()
    ];
    if total <= 0.0 || area.w <= 0.0 || area.h <= 0.0 {
        return out;
    }
    let scale = area.w * area.h / total;
    let areas: Vec<f64> = values.iter().map(|&v| v as f64 * scale).collect();
    let mut left = area;
    let mut i = 0;
    while i < areas.len() {
        let short = left.w.min(left.h);
        let mut end = i + 1;
        let mut best = worst(&areas[i..end], short);
        while end < areas.len() {
            let next = worst(&areas[i..=end], short);
            if next > best {
                break;
            }
            best = next;
            end += 1;
        }
        let row: f64 = areas[i..end].iter().sum();
        if row <= 0.0 {
            break;
        }
        if left.w >= left.h {
            // A column on the left.
            let width = (row / left.h).min(left.w);
            let mut y = left.y;
            for (k, a) in areas[i..end].iter().enumerate() {
                let h = a / width;
                out[i + k] = Rect {
                    x: left.x,
                    y,
                    w: width,
                    h,
                };
                y += h;
            }
            left.x += width;
            left.w -= width;
        } else {
            // A row at the top.
            let height = (row / left.w).min(left.h);
            let mut x = left.x;
            for (k, a) in areas[i..end].iter().enumerate() {
                let w = a / height;
                out[i + k] = Rect {
                    x,
                    y: left.y,
                    w,
                    h: height,
                };
                x += w;
            }
            left.y += height;
            left.h -= height;
        }
        i = end;
    }
    out
}

/// The worst aspect ratio of the rectangles of `row` laid along a side of length `side`.
fn worst(row: &[f64], side: f64) -> f64 {
    let sum: f64 = row.iter().sum();
    let (min, max) = row.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &a| {
        (lo.min(a), hi.max(a))
    });
    if sum <= 0.0 || min <= 0.0 {
        return f64::INFINITY;
    }
    let side2 = side * side;
    (side2 * max / (sum * sum)).max(sum * sum / (side2 * min))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn areas_follow_the_values_and_fill_the_rectangle() {
        let area = Rect {
            x: 10.0,
            y: 20.0,
            w: 600.0,
            h: 400.0,
        };
        let values = [6, 6, 4, 3, 2, 2, 1, 0];
        let rects = squarify(&values, area);
        assert_eq!(rects.len(), values.len());
        let total: u64 = values.iter().sum();
        for (rect, &value) in rects.iter().zip(&values) {
            let expected = area.w * area.h * value as f64 / total as f64;
            assert!(
                (rect.w * rect.h - expected).abs() < 1e-6,
                "{rect:?} for {value}"
            );
            assert!(rect.x >= area.x - 1e-9 && rect.x + rect.w <= area.x + area.w + 1e-6);
            assert!(rect.y >= area.y - 1e-9 && rect.y + rect.h <= area.y + area.h + 1e-6);
        }
        // No two overlap.
        for (i, a) in rects.iter().enumerate() {
            for b in &rects[i + 1..] {
                let overlap_w = (a.x + a.w).min(b.x + b.w) - a.x.max(b.x);
                let overlap_h = (a.y + a.h).min(b.y + b.h) - a.y.max(b.y);
                assert!(overlap_w <= 1e-6 || overlap_h <= 1e-6, "{a:?} and {b:?}");
            }
        }
    }

    #[test]
    fn nothing_to_lay_out_gives_empty_rectangles() {
        let area = Rect {
            x: 0.0,
            y: 0.0,
            w: 10.0,
            h: 10.0,
        };
        assert!(squarify(&[0, 0], area).iter().all(|r| r.w * r.h == 0.0));
        assert!(squarify(&[], area).is_empty());
    }
}
