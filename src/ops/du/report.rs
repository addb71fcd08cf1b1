//! The report of `du --kernels`, made a file at a time: each function's row (its copies and
//! bytes, the files that hold it), the code objects stored more than once and where each copy
//! is, the sums. Rows are held as a few numbers each, their names once each; the places of
//! the copies and the files of each function are written as found to an unnamed temporary
//! file (see `places`), so that nothing is held for each file of a tree.
//!
//! # Example
//!
//! Two copies of one bundle: each code object and each function is stored twice.
//!
//! ```
//! use offload::ops::du::{kernels, report};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let samples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
//! let file = samples.join("bundles/kernel-hip.o");
//! let one = kernels::file_kernels(&file, 1 << 30)?;
//! let report = report::report(&[one.clone(), one], None)?;
//! assert!(report.code_objects().all(|copies| copies.copies == 2));
//! assert!(report.kernels().any(|k| k.kernel && k.copies == 2));
//! assert_eq!(report.total.saved_code_objects * 2, report.total.code_object_bytes);
//! # Ok(())
//! # }
//! ```

use std::collections::HashMap;

use serde::Serialize;
use xxhash_rust::xxh3::xxh3_128;

use crate::ops::du::kernels::{Found, FoundFunction, Names};
use crate::ops::du::places::{At, Log, Place};

/// One function of one target, with the same bytes wherever it is stored: a row of the
/// report, its text borrowed from it.
#[derive(Debug, Clone, Serialize)]
pub struct Kernel<'r> {
    /// Its symbol's name (mangled).
    pub name: &'r str,
    /// The target of the code objects that hold it.
    pub target: &'r str,
    /// Whether it is a kernel (an entry point); a device function otherwise.
    pub kernel: bool,
    /// Its code's size in bytes.
    pub size: u64,
    /// How many times it is stored.
    pub copies: u64,
    /// The bytes all its copies take: `size * copies`.
    pub bytes: u64,
    /// The bytes keeping one copy would save: `size * (copies - 1)`.
    pub saved: u64,
    /// The files that hold it, in order, each once.
    pub files: Files<'r>,
}

/// The files that hold a function, in order, each once: read back one at a time from where
/// the report keeps them (a function stored in every file of a tree has a file per file).
#[derive(Clone)]
pub struct Files<'r> {
    report: &'r Report,
    row: &'r Row,
}

impl<'r> Files<'r> {
    /// How many.
    pub fn len(&self) -> usize {
        usize::try_from(self.row.more.1).map_or(usize::MAX, |more| more.saturating_add(1))
    }

    /// Whether there are none (never: a function is stored somewhere).
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The first.
    pub fn first(&self) -> &'r str {
        self.report.log.file_name(self.row.file)
    }

    /// Each, in order.
    pub fn iter(&self) -> impl Iterator<Item = &'r str> + 'r {
        let more = (self.row.more.1 > 0).then_some(self.row.more);
        std::iter::once(self.first()).chain(
            more.into_iter()
                .flat_map(|chain| self.report.log.linked_files(chain)),
        )
    }
}

impl std::fmt::Debug for Files<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl Serialize for Files<'_> {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

/// A function of the report as held: numbers into the report's names and targets, its files
/// where the report's log keeps them.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Row {
    name: usize,
    target: usize,
    kernel: bool,
    size: u64,
    copies: u64,
    bytes: u64,
    /// The first file that holds it (its name's record).
    file: At,
    /// The others: while the files are read, the last one's record of the log and how
    /// many; once the report is made, where they are in order, and how many.
    more: (u64, u64),
    /// The hash of the name of the last file that holds it: a file is listed once, also when
    /// it is named again later (twice on the command line).
    last_name: [u64; 2],
}

/// Strings held once each, by number, found again by their text: the few targets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Few {
    all: Vec<String>,
    numbers: HashMap<String, usize>,
}

impl Few {
    /// The number of `text`, added when new.
    fn number(&mut self, text: &str) -> usize {
        if let Some(&n) = self.numbers.get(text) {
            return n;
        }
        self.all.push(text.to_string());
        self.numbers.insert(text.to_string(), self.all.len() - 1);
        self.all.len() - 1
    }

    /// The string numbered `n`.
    fn get(&self, n: usize) -> &str {
        self.all.get(n).map_or("", String::as_str)
    }
}

/// A code object (or any device image) whose bytes are stored more than once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Copies {
    /// Its target (of its first copy).
    pub target: String,
    /// Its size in bytes, inflated.
    pub size: u64,
    /// How many times it is stored.
    pub copies: u64,
    /// The bytes keeping one copy would save: `size * (copies - 1)`.
    pub saved: u64,
    /// Where each copy is, in the order found.
    pub places: Vec<Place>,
}

/// The sums of a report.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Totals {
    /// How many device images were read.
    pub code_objects: u64,
    /// Their bytes, inflated.
    pub code_object_bytes: u64,
    /// How many functions with code they hold (each copy counted).
    pub functions: u64,
    /// The bytes of those functions' code (each copy counted).
    pub function_bytes: u64,
    /// The bytes keeping one copy of each code object stored more than once would save.
    pub saved_code_objects: u64,
    /// The bytes keeping one copy of each function stored more than once would save (those
    /// of whole code objects stored more than once included).
    pub saved_functions: u64,
}

/// What `du --kernels` reports. The functions are held as a few numbers each, their names
/// once each, and are handed out one at a time ([`Report::kernels`]), so that the report takes
/// memory for its rows' numbers and the distinct names, not for the text of every row. Where
/// each copy of a code object is, and which files hold each function, are kept out of memory,
/// in an unnamed temporary file, and read back as they are handed out.
#[derive(Debug, Default)]
pub struct Report {
    /// The functions, most bytes first (then by target and name); the first `top` only when
    /// asked.
    rows: Vec<Row>,
    names: Names,
    targets: Few,
    /// The files' names, the places of the copies, the files of the functions.
    log: Log,
    /// The code objects stored more than once, most bytes saved first.
    copied: Vec<Counted>,
    /// The sums, over every function (not only the first `top`).
    pub total: Totals,
}

/// A code object of the report as held: its target by number, and where its copies are in
/// the log.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Counted {
    target: usize,
    size: u64,
    copies: u64,
    /// While the files are read, the record of its last copy; once the report is made,
    /// where its copies are in order, and how many.
    places: (u64, u64),
}

impl Report {
    /// The code objects stored more than once, most bytes saved first, each with where its
    /// copies are (made as it is handed out; [`Report::places`] gives them one at a time).
    pub fn code_objects(&self) -> impl ExactSizeIterator<Item = Copies> + Clone + '_ {
        self.copied.iter().map(|held| Copies {
            places: self.log.places(held.places).collect(),
            ..self.copies(held)
        })
    }

    /// The code objects stored more than once, as [`Report::code_objects`] gives them but
    /// with their places left empty: those come one at a time from [`Report::places`].
    pub fn code_objects_unplaced(&self) -> impl ExactSizeIterator<Item = Copies> + Clone + '_ {
        self.copied.iter().map(|held| self.copies(held))
    }

    /// The places of the copies of the code object numbered `n` (from 0) of
    /// [`Report::code_objects`], in the order found, each read back as it is handed out: a
    /// code object copied into every file of a tree has a place per file.
    pub fn places(&self, n: usize) -> impl Iterator<Item = Place> + '_ {
        (self.copied.get(n).into_iter()).flat_map(move |held| self.log.places(held.places))
    }

    /// What the report says of the code object `held`, but its places.
    fn copies(&self, held: &Counted) -> Copies {
        Copies {
            target: self.targets.get(held.target).to_string(),
            size: held.size,
            copies: held.copies,
            saved: held.size.saturating_mul(held.copies.saturating_sub(1)),
            places: Vec::new(),
        }
    }

    /// The functions, most bytes first (then by target and name).
    pub fn kernels(&self) -> impl ExactSizeIterator<Item = Kernel<'_>> + Clone + '_ {
        self.rows.iter().map(|row| Kernel {
            name: self.names.get(row.name),
            target: self.targets.get(row.target),
            kernel: row.kernel,
            size: row.size,
            copies: row.copies,
            bytes: row.bytes,
            saved: row.size.saturating_mul(row.copies.saturating_sub(1)),
            files: Files { report: self, row },
        })
    }
}

/// The report as JSON: `kernels` (each row made as it is written), `code_objects` (each place
/// made as it is written), `total`.
impl Serialize for Report {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        /// A sequence written an element at a time, each made as it is written.
        struct Each<I>(I);
        impl<I: Iterator<Item: Serialize> + Clone> Serialize for Each<I> {
            fn serialize<S: serde::Serializer>(
                &self,
                serializer: S,
            ) -> std::result::Result<S::Ok, S::Error> {
                serializer.collect_seq(self.0.clone())
            }
        }
        /// A code object stored more than once, as [`Copies`] is written, its places made
        /// one at a time.
        struct Object<'r>(&'r Report, &'r Counted);
        impl Serialize for Object<'_> {
            fn serialize<S: serde::Serializer>(
                &self,
                serializer: S,
            ) -> std::result::Result<S::Ok, S::Error> {
                let Copies {
                    target,
                    size,
                    copies,
                    saved,
                    ..
                } = self.0.copies(self.1);
                let mut object = serializer.serialize_struct("Copies", 5)?;
                object.serialize_field("target", &target)?;
                object.serialize_field("size", &size)?;
                object.serialize_field("copies", &copies)?;
                object.serialize_field("saved", &saved)?;
                object.serialize_field("places", &Each(self.0.log.places(self.1.places)))?;
                object.end()
            }
        }
        let mut report = serializer.serialize_struct("Report", 3)?;
        report.serialize_field("kernels", &Each(self.kernels()))?;
        let objects = self.copied.iter().map(|held| Object(self, held));
        report.serialize_field("code_objects", &Each(objects))?;
        report.serialize_field("total", &self.total)?;
        report.end()
    }
}

/// The report of the files `found`, keeping the `top` functions with the most bytes when
/// asked. An error is one of the temporary file that keeps the places.
pub fn report(found: &[Found], top: Option<usize>) -> std::io::Result<Report> {
    let mut reporting = Reporting::default();
    for file in found {
        reporting.add(file);
    }
    reporting.finish(top)
}

/// A report being made, a file at a time ([`Reporting::add`]): what is held of each file is
/// nothing but what the report says of it (where its copies are), written as found to an
/// unnamed temporary file, so that a tree's files can be let go as they are read.
#[derive(Debug, Default)]
pub struct Reporting {
    report: Report,
    /// Each code object by the hash of its bytes, and those hashes in the order found.
    objects: HashMap<u128, Counted>,
    object_order: Vec<u128>,
    /// Each function's row, by target, name and the hash of its bytes.
    rows: HashMap<(usize, usize, u128), usize>,
    /// The last file whose images were counted: its name, its record, its name's hash.
    last_file: Option<(String, At, [u64; 2])>,
    /// The first error writing the temporary file.
    failed: Option<std::io::Error>,
}

impl Reporting {
    /// Counts the images and functions of one more file (files in the order reported).
    pub fn add(&mut self, file: &Found) {
        if let Err(e) = self.try_add(file) {
            self.failed.get_or_insert(e);
        }
    }

    /// [`Reporting::add`], stopping at an error writing the temporary file.
    fn try_add(&mut self, file: &Found) -> std::io::Result<()> {
        if self.failed.is_some() {
            return Ok(());
        }
        for image in &file.images {
            let report = &mut self.report;
            let total = &mut report.total;
            total.code_objects += 1;
            total.code_object_bytes = total.code_object_bytes.saturating_add(image.size);
            let target = report.targets.number(&image.target);
            // A file's images come together: its name is written once, as the last one.
            let here = match &self.last_file {
                Some((name, at, hash)) if *name == image.place.file => (*at, *hash),
                _ => {
                    let at = report.log.file(&image.place.file)?;
                    let hash = name_hash(&image.place.file);
                    self.last_file = Some((image.place.file.clone(), at, hash));
                    (at, hash)
                }
            };
            let object_order = &mut self.object_order;
            let held = self.objects.entry(image.hash).or_insert_with(|| {
                object_order.push(image.hash);
                Counted {
                    target,
                    size: image.size,
                    copies: 0,
                    places: (0, 0),
                }
            });
            let previous = (held.copies > 0).then_some(held.places.0);
            held.places.0 = report.log.place(here.0, &image.place, previous)?;
            held.copies += 1;
            for function in &image.functions {
                count_function(report, &mut self.rows, (file, function), target, here)?;
            }
        }
        Ok(())
    }

    /// The report of the files added, keeping the `top` functions with the most bytes when
    /// asked. An error is one of the temporary file that keeps the places.
    pub fn finish(self, top: Option<usize>) -> std::io::Result<Report> {
        let Reporting {
            mut report,
            mut objects,
            object_order,
            rows,
            failed,
            ..
        } = self;
        if let Some(e) = failed {
            return Err(e);
        }
        drop(rows);
        let saved_of = |held: &Counted| held.size.saturating_mul(held.copies.saturating_sub(1));
        let mut copied: Vec<Counted> = object_order
            .iter()
            .filter_map(|hash| objects.remove(hash))
            .filter(|held| held.copies > 1)
            .collect();
        drop(objects);
        copied.sort_by_key(|held| std::cmp::Reverse(saved_of(held)));
        let total = &mut report.total;
        total.saved_code_objects =
            (copied.iter()).fold(0, |sum, held| sum.saturating_add(saved_of(held)));
        let saved = |row: &Row| row.size.saturating_mul(row.copies.saturating_sub(1));
        report.total.saved_functions =
            (report.rows.iter()).fold(0, |sum, r| sum.saturating_add(saved(r)));
        let (names, targets) = (&report.names, &report.targets);
        report.rows.sort_by(|a, b| {
            (b.bytes.cmp(&a.bytes))
                .then_with(|| targets.get(a.target).cmp(targets.get(b.target)))
                .then_with(|| names.get(a.name).cmp(names.get(b.name)))
                .then_with(|| a.size.cmp(&b.size))
        });
        if let Some(top) = top {
            report.rows.truncate(top);
        }
        report.rows.shrink_to_fit();
        // Each chain put in the order found, once the log is read back.
        report.log.seal()?;
        for held in &mut copied {
            held.places = report.log.put_in_order(held.places.0, false)?;
        }
        for row in report.rows.iter_mut().filter(|row| row.more.1 > 0) {
            row.more = report.log.put_in_order(row.more.0, true)?;
        }
        report.log.seal_order()?;
        report.copied = copied;
        Ok(report)
    }
}

/// The hash a file's name is told by, among the files that hold a function.
fn name_hash(name: &str) -> [u64; 2] {
    let hash = xxh3_128(name.as_bytes());
    [(hash >> 64) as u64, hash as u64]
}

/// Counts one copy of `function` (of the file `found`, in an image of the target numbered
/// `target` in the file whose name's record and hash are `file`) into `report`, its row
/// found in `rows`.
fn count_function(
    report: &mut Report,
    rows: &mut HashMap<(usize, usize, u128), usize>,
    (found, function): (&Found, &FoundFunction),
    target: usize,
    (file, hash): (At, [u64; 2]),
) -> std::io::Result<()> {
    let total = &mut report.total;
    total.functions += 1;
    // Sizes are the symbols' own: a damaged table may declare anything.
    total.function_bytes = total.function_bytes.saturating_add(function.size);
    let name = report.names.intern(found.name(function));
    let n = *rows
        .entry((target, name, function.hash))
        .or_insert_with(|| {
            report.rows.push(Row {
                name,
                target,
                kernel: function.kernel,
                size: function.size,
                copies: 0,
                bytes: 0,
                file,
                more: (0, 0),
                last_name: hash,
            });
            report.rows.len() - 1
        });
    let Some(row) = report.rows.get_mut(n) else {
        return Ok(());
    };
    row.copies += 1;
    row.bytes = row.bytes.saturating_add(function.size);
    // A file named again later (twice on the command line) is written again: it is the same
    // file when its name is.
    if row.copies > 1 && row.last_name != hash {
        let previous = (row.more.1 > 0).then_some(row.more.0);
        row.more = (report.log.link(file, previous)?, row.more.1 + 1);
        row.last_name = hash;
    }
    Ok(())
}
