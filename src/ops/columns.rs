//! Tables for people: cells in columns two spaces apart, each column as wide as its widest
//! cell, aligned to the left (words) or the right (numbers), no spaces at line ends.

/// Where a column's cells sit in its width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Words: padded on the right.
    Left,
    /// Numbers: padded on the left.
    Right,
}

/// The table of `header` and `rows`, column `k` aligned as `align[k]` (left where not given).
pub fn render<R: AsRef<[String]>>(header: &[&str], rows: &[R], align: &[Align]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row.as_ref()) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut text = String::new();
        for (k, (cell, w)) in cells.zip(&widths).enumerate() {
            match align.get(k).copied().unwrap_or(Align::Left) {
                Align::Left => text.push_str(&format!("{cell:<w$}  ")),
                Align::Right => text.push_str(&format!("{cell:>w$}  ")),
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    };
    line(&mut header.iter().copied());
    for row in rows {
        line(&mut row.as_ref().iter().map(String::as_str));
    }
    out
}

/// Numbers, in increasing order, as ranges: `1-3, 5`.
pub fn ranges(numbers: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut k = 0;
    while k < numbers.len() {
        let start = numbers[k];
        let mut end = start;
        while k + 1 < numbers.len() && numbers[k + 1] == end + 1 {
            k += 1;
            end = numbers[k];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        k += 1;
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_as_wide_as_their_widest_cell() {
        let rows = [
            vec!["1".to_string(), "gfx90a".into(), "12".into()],
            vec!["10".to_string(), "gfx11-generic".into(), "3".into()],
        ];
        assert_eq!(
            render(
                &["#", "ARCH", "SIZE"],
                &rows,
                &[Align::Right, Align::Left, Align::Right]
            ),
            " #  ARCH           SIZE\n 1  gfx90a           12\n10  gfx11-generic     3\n"
        );
    }
}
