//! Tables for people: cells in columns two spaces apart, each column as wide as its widest
//! cell, aligned to the left (words) or the right (numbers), no spaces at line ends.
//!
//! Cells come from files (names, targets, entry IDs): each is shown escaped
//! ([`crate::io::shown`]), and one longer than [`WIDEST_PADDED`] characters is written whole
//! but neither padded nor allowed to widen its column, so that one hostile cell can neither
//! stretch every line of the table nor break the alignment of the others.

use std::borrow::Cow;

/// The widest a column is padded to; a longer cell overflows its column.
pub const WIDEST_PADDED: usize = 96;

/// Where a column's cells sit in its width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Words: padded on the right.
    Left,
    /// Numbers: padded on the left.
    Right,
}

/// The table of `header` and `rows`, column `k` aligned as `align[k]` (left where not given).
pub fn render<R: AsRef<[C]>, C: AsRef<std::ffi::OsStr>>(
    header: &[&str],
    rows: &[R],
    align: &[Align],
) -> String {
    let shown_rows: Vec<Vec<Cow<'_, str>>> = rows
        .iter()
        .map(|row| row.as_ref().iter().map(crate::io::shown).collect())
        .collect();
    let mut widths = Widths::of(header);
    for row in &shown_rows {
        widths.fit(row.iter().map(|c| c.as_ref()));
    }
    let mut out = String::new();
    widths.line(&mut out, header.iter().copied(), align);
    for row in &shown_rows {
        widths.line(&mut out, row.iter().map(|c| c.as_ref()), align);
    }
    out
}

/// A table too large to hold as text, written to `out` a line at a time: `rows` is called
/// twice, once to measure the columns and once to write them, so that only one row is made
/// at a time. The text is [`render`]'s.
// Only the command line writes tables this large.
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub fn write_table<I, R, C>(
    header: &[&str],
    rows: impl Fn() -> I,
    align: &[Align],
    out: &mut dyn std::io::Write,
) -> std::io::Result<()>
where
    I: Iterator<Item = R>,
    R: AsRef<[C]>,
    C: AsRef<std::ffi::OsStr>,
{
    let (widths, mut line) = measured_header(header, &rows, align, out)?;
    for row in rows() {
        let shown: Vec<Cow<'_, str>> = row.as_ref().iter().map(crate::io::shown).collect();
        line.clear();
        widths.line(&mut line, shown.iter().map(|c| c.as_ref()), align);
        out.write_all(line.as_bytes())?;
    }
    Ok(())
}

/// What hands a row's last cell to [`write_table_with_tail`] a piece at a time: called with
/// the row's number and what takes each piece.
pub type Tail<'t> =
    dyn FnMut(usize, &mut dyn FnMut(&str) -> std::io::Result<()>) -> std::io::Result<()> + 't;

/// [`write_table`] for a table whose last column's cells may be too long to make whole (a
/// list with an item per file of a tree): `rows` gives the other cells of each row, and
/// `tail(k, piece)` hands `piece` each part of row `k`'s last cell in turn, each shown
/// escaped as it is written. The text is [`write_table`]'s with the parts joined.
// Only the command line writes tables this large.
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub fn write_table_with_tail<I, R, C>(
    header: &[&str],
    rows: impl Fn() -> I,
    align: &[Align],
    tail: &mut Tail<'_>,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()>
where
    I: Iterator<Item = R>,
    R: AsRef<[C]>,
    C: AsRef<std::ffi::OsStr>,
{
    let (widths, mut line) = measured_header(header, &rows, align, out)?;
    for (k, row) in rows().enumerate() {
        let shown: Vec<Cow<'_, str>> = row.as_ref().iter().map(crate::io::shown).collect();
        line.clear();
        widths.cells(&mut line, shown.iter().map(|c| c.as_ref()), align);
        // The line's end is trimmed as a line's is, its spaces held until more text comes.
        let mut trimmed = Trimmed {
            out: &mut *out,
            spaces: String::new(),
        };
        trimmed.push(&line)?;
        tail(k, &mut |piece| trimmed.push(&crate::io::shown(piece)))?;
        out.write_all(b"\n")?;
    }
    Ok(())
}

/// The widths of the columns of `header` and every row `rows` makes (each shown escaped),
/// once the header line is written to `out`; with the line, to write the rows' lines into.
fn measured_header<I, R, C>(
    header: &[&str],
    rows: &impl Fn() -> I,
    align: &[Align],
    out: &mut dyn std::io::Write,
) -> std::io::Result<(Widths, String)>
where
    I: Iterator<Item = R>,
    R: AsRef<[C]>,
    C: AsRef<std::ffi::OsStr>,
{
    let mut widths = Widths::of(header);
    for row in rows() {
        let shown: Vec<Cow<'_, str>> = row.as_ref().iter().map(crate::io::shown).collect();
        widths.fit(shown.iter().map(|c| c.as_ref()));
    }
    let mut line = String::new();
    widths.line(&mut line, header.iter().copied(), align);
    out.write_all(line.as_bytes())?;
    Ok((widths, line))
}

/// A line written as it comes, but for the white space at its end: held until text follows
/// it, and dropped at the end.
struct Trimmed<'o> {
    out: &'o mut dyn std::io::Write,
    spaces: String,
}

impl Trimmed<'_> {
    /// Writes `text`, holding back the white space at its end.
    fn push(&mut self, text: &str) -> std::io::Result<()> {
        let Some((at, c)) = text.char_indices().rev().find(|(_, c)| !c.is_whitespace()) else {
            self.spaces.push_str(text);
            return Ok(());
        };
        let (written, spaces) = text.split_at(at + c.len_utf8());
        self.out.write_all(self.spaces.as_bytes())?;
        self.out.write_all(written.as_bytes())?;
        self.spaces.clear();
        self.spaces.push_str(spaces);
        Ok(())
    }
}

/// The most bytes of rows a [`Spooled`] table holds in memory before it moves them to a
/// temporary file.
pub const SPOOLED_IN_MEMORY: usize = 1 << 20;

/// A table whose rows come one at a time and may be too many to hold (one per file of a
/// tree): the columns' widths need every row before the first line is written, so the rows
/// are kept as their shown cells, in memory while they are few and in an unnamed temporary
/// file past [`SPOOLED_IN_MEMORY`] bytes, and written once the last is in. The text is
/// [`render`]'s; the memory is that of a row and a buffer, whatever the number of rows.
// Only the command line writes tables this large.
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub struct Spooled {
    header: Vec<String>,
    align: Vec<Align>,
    widths: Widths,
    /// Rows not yet in the file: each its number of cells, then each cell's length and
    /// bytes (little-endian `u64`s).
    held: Vec<u8>,
    limit: usize,
    file: Option<std::io::BufWriter<std::fs::File>>,
}

#[cfg_attr(not(feature = "cli"), allow(dead_code))]
impl Spooled {
    /// An empty table of `header`, column `k` aligned as `align[k]` (left where not given).
    pub fn new(header: &[&str], align: &[Align]) -> Spooled {
        Spooled::holding(header, align, SPOOLED_IN_MEMORY)
    }

    /// An empty table that moves its rows to a file past `limit` bytes.
    fn holding(header: &[&str], align: &[Align], limit: usize) -> Spooled {
        Spooled {
            header: header.iter().map(|h| h.to_string()).collect(),
            align: align.to_vec(),
            widths: Widths::of(header),
            held: Vec::new(),
            limit,
            file: None,
        }
    }

    /// Adds a row, after the others.
    pub fn push<C: AsRef<std::ffi::OsStr>>(&mut self, row: &[C]) -> std::io::Result<()> {
        let shown: Vec<Cow<'_, str>> = row.iter().map(crate::io::shown).collect();
        self.widths.fit(shown.iter().map(|c| c.as_ref()));
        self.held
            .extend_from_slice(&(shown.len() as u64).to_le_bytes());
        for cell in &shown {
            self.held
                .extend_from_slice(&(cell.len() as u64).to_le_bytes());
            self.held.extend_from_slice(cell.as_bytes());
        }
        if self.held.len() > self.limit {
            self.move_held()?;
        }
        Ok(())
    }

    /// Moves the rows held in memory to the temporary file, made on the first call.
    fn move_held(&mut self) -> std::io::Result<()> {
        let file = match &mut self.file {
            Some(file) => file,
            None => self.file.insert(std::io::BufWriter::with_capacity(
                1 << 16,
                tempfile::tempfile()?,
            )),
        };
        std::io::Write::write_all(file, &self.held)?;
        self.held.clear();
        Ok(())
    }

    /// Writes the table to `out`: the header, then the rows in the order they came.
    pub fn write(mut self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        let header: Vec<&str> = self.header.iter().map(String::as_str).collect();
        let mut line = String::new();
        self.widths
            .line(&mut line, header.iter().copied(), &self.align);
        out.write_all(line.as_bytes())?;
        let rows: Box<dyn std::io::Read> = match self.file.take() {
            None => Box::new(std::io::Cursor::new(std::mem::take(&mut self.held))),
            Some(file) => {
                let mut file = file.into_inner().map_err(|e| e.into_error())?;
                std::io::Write::write_all(&mut file, &self.held)?;
                std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(0))?;
                Box::new(std::io::BufReader::with_capacity(1 << 16, file))
            }
        };
        let mut rows = rows;
        let mut cells: Vec<String> = Vec::new();
        while read_row(&mut rows, &mut cells)? {
            line.clear();
            self.widths
                .line(&mut line, cells.iter().map(String::as_str), &self.align);
            out.write_all(line.as_bytes())?;
        }
        Ok(())
    }
}

/// Reads the next row a [`Spooled`] table kept into `cells`; `false` at the end.
fn read_row(from: &mut dyn std::io::Read, cells: &mut Vec<String>) -> std::io::Result<bool> {
    let mut word = [0u8; 8];
    match from.read_exact(&mut word) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(false),
        Err(e) => return Err(e),
    }
    let count = u64::from_le_bytes(word);
    cells.clear();
    for _ in 0..count {
        from.read_exact(&mut word)?;
        let len = u64::from_le_bytes(word);
        let mut cell = Vec::new();
        std::io::Read::read_to_end(&mut std::io::Read::take(&mut *from, len), &mut cell)?;
        let cell = String::from_utf8(cell)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        cells.push(cell);
    }
    Ok(true)
}

/// The width of each column: its widest cell up to [`WIDEST_PADDED`] characters.
struct Widths(Vec<usize>);

impl Widths {
    /// The widths of `header`'s names.
    fn of(header: &[&str]) -> Self {
        Widths(header.iter().map(|h| h.chars().count()).collect())
    }

    /// Widens the columns to the cells of a row.
    fn fit<'c>(&mut self, cells: impl Iterator<Item = &'c str>) {
        for (w, cell) in self.0.iter_mut().zip(cells) {
            let len = cell.chars().count();
            if len <= WIDEST_PADDED {
                *w = (*w).max(len);
            }
        }
    }

    /// Adds the line of `cells` to `out`, aligned as `align` says.
    fn line<'c>(&self, out: &mut String, cells: impl Iterator<Item = &'c str>, align: &[Align]) {
        let mut text = String::new();
        self.cells(&mut text, cells, align);
        out.push_str(text.trim_end());
        out.push('\n');
    }

    /// Adds `cells` to `out`, aligned as `align` says, each followed by two spaces.
    fn cells<'c>(&self, text: &mut String, cells: impl Iterator<Item = &'c str>, align: &[Align]) {
        for (k, (cell, &w)) in cells.zip(&self.0).enumerate() {
            let pad = w.saturating_sub(cell.chars().count());
            match align.get(k).copied().unwrap_or(Align::Left) {
                Align::Left => {
                    text.push_str(cell);
                    text.extend(std::iter::repeat_n(' ', pad));
                }
                Align::Right => {
                    text.extend(std::iter::repeat_n(' ', pad));
                    text.push_str(cell);
                }
            }
            text.push_str("  ");
        }
    }
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

    #[test]
    fn a_table_written_a_row_at_a_time_is_the_one_rendered() {
        let long = "y".repeat(200);
        let rows = [
            vec!["1".to_string(), long, "12".into()],
            vec!["10".to_string(), "a\tb".into(), "3".into()],
            vec!["100".to_string(), "gfx90a".into(), String::new()],
        ];
        let (header, align) = (["#", "ARCH", "SIZE"], [Align::Right, Align::Left]);
        let mut written = Vec::new();
        write_table(&header, || rows.iter(), &align, &mut written).unwrap();
        assert_eq!(written, render(&header, &rows, &align).into_bytes());
    }

    #[test]
    fn a_last_column_written_a_piece_at_a_time_is_the_one_rendered() {
        // The last cells: pieces joined, escaped, their spaces at the end trimmed.
        let tails: [&[&str]; 4] = [
            &["a.so @1", ", ", "b\n.so"],
            &[],
            &["c ", " ", "  "],
            &["é"],
        ];
        let rows = [["1", "gfx90a"], ["10", "y"], ["100", "z  "], ["2", ""]];
        let whole: Vec<Vec<String>> = (rows.iter().zip(tails))
            .map(|(row, tail)| {
                let mut cells: Vec<String> = row.iter().map(|c| c.to_string()).collect();
                cells.push(tail.concat());
                cells
            })
            .collect();
        let header = ["#", "TARGET", "PLACES"];
        let align = [Align::Right, Align::Left];
        let mut written = Vec::new();
        let mut tail = |k: usize, piece: &mut dyn FnMut(&str) -> std::io::Result<()>| {
            tails
                .get(k)
                .into_iter()
                .flat_map(|t| t.iter())
                .try_for_each(|p| piece(p))
        };
        write_table_with_tail(&header, || rows.iter(), &align, &mut tail, &mut written).unwrap();
        let expected = render(&header, &whole, &align);
        assert_eq!(String::from_utf8(written).unwrap(), expected);
        assert!(expected.contains("b\\n.so\n"), "{expected}");
    }

    #[test]
    fn a_spooled_table_is_the_one_rendered_in_memory_or_in_a_file() {
        let rows: Vec<Vec<String>> = (0..500)
            .map(|i| {
                let name = if i == 7 {
                    "y".repeat(200)
                } else {
                    format!("n\t{i}")
                };
                vec![i.to_string(), name, (i * 37 % 1000).to_string()]
            })
            .collect();
        let (header, align) = (["#", "NAME", "SIZE"], [Align::Right, Align::Left]);
        for limit in [SPOOLED_IN_MEMORY, 100, 0] {
            let mut table = Spooled::holding(&header, &align, limit);
            for row in &rows {
                table.push(row).unwrap();
            }
            let mut written = Vec::new();
            table.write(&mut written).unwrap();
            assert_eq!(written, render(&header, &rows, &align).into_bytes());
        }
        let mut written = Vec::new();
        Spooled::new(&header, &align).write(&mut written).unwrap();
        assert_eq!(
            written,
            render::<[String; 3], String>(&header, &[], &align).into_bytes()
        );
    }

    #[test]
    fn a_cell_too_wide_overflows_without_widening_its_column() {
        let long = "x".repeat(70_000);
        let rows = [
            vec!["1".to_string(), long.clone(), "12".into()],
            vec!["2".to_string(), "a\nb".into(), "3".into()],
        ];
        let text = render(&["#", "ARCH", "SIZE"], &rows, &[Align::Right]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[1], format!("1  {long}  12"));
        assert_eq!(lines[2], "2  a\\nb  3");
    }
}
