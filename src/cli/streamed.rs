//! Output written as it is made, for listings of trees too large to hold: a JSON array an
//! element at a time, byte for byte the text serde_json's pretty printer makes of the whole.

use std::io::Write;

/// A JSON array being written to `out` an element at a time, nested `depth` levels deep (0
/// for an array that is the whole document). The text is that of `to_writer_pretty` of the
/// array at that depth: `[]` when empty, else each element on lines of its own, indented two
/// spaces more than the array, `,` after all but the last.
pub(crate) struct JsonArray {
    depth: usize,
    elements: u64,
    buffer: Vec<u8>,
}

impl JsonArray {
    /// An array nothing of which is written yet.
    pub(crate) fn new(depth: usize) -> JsonArray {
        JsonArray {
            depth,
            elements: 0,
            buffer: Vec::new(),
        }
    }

    /// Writes `element` to `out`, after the ones before (the `[` before the first).
    pub(crate) fn push<T: serde::Serialize>(
        &mut self,
        out: &mut dyn Write,
        element: &T,
    ) -> std::io::Result<()> {
        self.buffer.clear();
        serde_json::to_writer_pretty(&mut self.buffer, element).map_err(std::io::Error::from)?;
        out.write_all(if self.elements == 0 { b"[" } else { b"," })?;
        let indent = "  ".repeat(self.depth + 1);
        // Strings in JSON hold no raw line feed: every one in the text is between tokens.
        for line in self.buffer.split(|&b| b == b'\n') {
            out.write_all(b"\n")?;
            out.write_all(indent.as_bytes())?;
            out.write_all(line)?;
        }
        self.elements += 1;
        Ok(())
    }

    /// Ends the array: its `]` (`[]` when nothing was pushed).
    pub(crate) fn end(self, out: &mut dyn Write) -> std::io::Result<()> {
        if self.elements == 0 {
            return out.write_all(b"[]");
        }
        out.write_all(b"\n")?;
        out.write_all("  ".repeat(self.depth).as_bytes())?;
        out.write_all(b"]")
    }
}

/// Writes `value` to `out` as `to_writer_pretty` writes it nested `depth` levels deep (a
/// member's value in an object that is the whole document: depth 1): its lines after the
/// first indented two spaces a level.
pub(crate) fn write_nested<T: serde::Serialize>(
    out: &mut dyn Write,
    value: &T,
    depth: usize,
) -> std::io::Result<()> {
    let text = serde_json::to_vec_pretty(value).map_err(std::io::Error::from)?;
    let indent = "  ".repeat(depth);
    for (k, line) in text.split(|&b| b == b'\n').enumerate() {
        if k > 0 {
            out.write_all(b"\n")?;
            out.write_all(indent.as_bytes())?;
        }
        out.write_all(line)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Serialize)]
    struct Row {
        name: String,
        sizes: Vec<u64>,
        empty: Vec<u64>,
        inner: Option<Box<Row>>,
    }

    fn rows(n: u64) -> Vec<Row> {
        (0..n)
            .map(|i| Row {
                name: format!("line\nfeed \"{i}\""),
                sizes: (0..i % 3).collect(),
                empty: Vec::new(),
                inner: (i % 2 == 1).then(|| {
                    Box::new(Row {
                        name: String::new(),
                        sizes: vec![i],
                        empty: Vec::new(),
                        inner: None,
                    })
                }),
            })
            .collect()
    }

    #[test]
    fn an_array_written_an_element_at_a_time_is_the_one_printed_whole() {
        for n in [0, 1, 2, 5] {
            let rows = rows(n);
            let mut written = Vec::new();
            let mut array = JsonArray::new(0);
            for row in &rows {
                array.push(&mut written, row).unwrap();
            }
            array.end(&mut written).unwrap();
            let whole = serde_json::to_string_pretty(&rows).unwrap();
            assert_eq!(String::from_utf8(written).unwrap(), whole);
        }
    }

    #[test]
    fn a_nested_array_is_indented_as_in_the_whole() {
        #[derive(serde::Serialize)]
        struct Report {
            files: Vec<Row>,
            total: Vec<Row>,
        }
        for n in [0, 3] {
            let report = Report {
                files: rows(n),
                total: rows(n),
            };
            let mut written = b"{\n  \"files\": ".to_vec();
            let mut array = JsonArray::new(1);
            for row in &report.files {
                array.push(&mut written, row).unwrap();
            }
            array.end(&mut written).unwrap();
            written.extend_from_slice(b",\n  \"total\": ");
            write_nested(&mut written, &report.total, 1).unwrap();
            written.extend_from_slice(b"\n}");
            let whole = serde_json::to_string_pretty(&report).unwrap();
            assert_eq!(String::from_utf8(written).unwrap(), whole);
        }
    }
}
