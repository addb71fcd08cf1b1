//! How long work tells a progress display how it goes: in bytes written, or in files done.

/// Hears how the work goes, for a progress display.
pub trait Progress: Sync {
    /// The work starts: `amount` in all (bytes, or files).
    fn start(&self, amount: u64) {
        let _ = amount;
    }
    /// `amount` more is done.
    fn advance(&self, amount: u64) {
        let _ = amount;
    }
    /// The work is over.
    fn finish(&self) {}
}

/// No progress display.
impl Progress for () {}
