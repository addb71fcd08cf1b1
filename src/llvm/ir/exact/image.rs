//! How LLVM writes a byte array constant, told from its content in one pass: all zeros is a
//! null constant; a C string (one NUL, at the end) is a CSTRING record without the NUL, in
//! 6-bit characters, 7-bit ones, or unabbreviated; anything else is a STRING record of bytes.

use crate::llvm::bitcode::writer::{char6, Field};

/// How an image's bytes are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageForm {
    /// All zeros (or none): a null constant.
    Zero,
    /// A STRING record of 8-bit elements.
    String,
    /// A CSTRING record of the bytes before the NUL, each in this encoding (6-bit VBR: the
    /// record is unabbreviated).
    CString(Field),
}

/// What the writer needs to know of an image's content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageContent {
    /// Its length in bytes.
    pub len: u64,
    /// How it is written.
    pub form: ImageForm,
    /// The length of its elements in bits.
    pub bits: u64,
}

impl ImageContent {
    /// The content of `bytes`.
    pub fn of(bytes: &[u8]) -> ImageContent {
        let mut scan = ImageScan::default();
        scan.push(bytes);
        scan.finish()
    }

    /// How many of the bytes are written, from the first.
    pub fn count(&self) -> u64 {
        match self.form {
            ImageForm::Zero => 0,
            ImageForm::String => self.len,
            ImageForm::CString(_) => self.len.saturating_sub(1),
        }
    }
}

/// An image's content, read a chunk at a time.
#[derive(Debug, Clone)]
pub struct ImageScan {
    len: u64,
    nonzero: bool,
    /// Of the bytes before the last one: whether one is NUL, whether all are 6-bit
    /// characters, whether all are 7-bit, and their length as 6-bit VBRs.
    zero_before_last: bool,
    all_char6: bool,
    all_7bit: bool,
    vbr_bits: u64,
    last: Option<u8>,
}

impl Default for ImageScan {
    fn default() -> ImageScan {
        ImageScan {
            len: 0,
            nonzero: false,
            zero_before_last: false,
            all_char6: true,
            all_7bit: true,
            vbr_bits: 0,
            last: None,
        }
    }
}

impl ImageScan {
    /// Reads the next bytes.
    pub fn push(&mut self, bytes: &[u8]) {
        let Some((&last, before)) = bytes.split_last() else {
            return;
        };
        if let Some(previous) = self.last {
            self.account(&[previous]);
        }
        self.account(before);
        self.nonzero |= last != 0;
        self.last = Some(last);
        self.len += bytes.len() as u64;
    }

    /// Counts `before`, bytes that are not the last: a block at a time, in loops without
    /// branches that the compiler turns into vector instructions, and each property only as
    /// long as it can still change (an image of random bytes is not 6-bit text for long).
    fn account(&mut self, before: &[u8]) {
        for block in before.chunks(4096) {
            let (mut zero, mut high, mut small) = (false, 0u8, 0u32);
            for &byte in block {
                zero |= byte == 0;
                high |= byte;
                small += u32::from(byte < 32);
            }
            self.zero_before_last |= zero;
            self.nonzero |= high != 0;
            self.all_7bit &= high < 0x80;
            self.vbr_bits += 12 * block.len() as u64 - 6 * u64::from(small);
            if self.all_char6 {
                self.all_char6 = block.iter().all(|&byte| char6(byte).is_some());
            }
        }
    }

    /// Whether the form is settled whatever follows: a byte that is not NUL was read, and a
    /// NUL before the last byte read, so the image is a STRING record. An image that starts
    /// as an object file does (its header holds both); the rest need not be read.
    pub fn settled(&self) -> bool {
        self.nonzero && self.zero_before_last
    }

    /// The content of an image `len` bytes long (at least those read) whose form was settled
    /// by the bytes read ([`ImageScan::settled`]).
    pub fn finish_settled(mut self, len: u64) -> ImageContent {
        self.len = self.len.max(len);
        self.finish()
    }

    /// The content read.
    pub fn finish(self) -> ImageContent {
        let (form, bits) = if !self.nonzero {
            (ImageForm::Zero, 0)
        } else if self.last == Some(0) && !self.zero_before_last {
            let count = self.len - 1;
            if self.all_char6 {
                (ImageForm::CString(Field::Char6), 6 * count)
            } else if self.all_7bit {
                (ImageForm::CString(Field::Fixed(7)), 7 * count)
            } else {
                (ImageForm::CString(Field::Vbr(6)), self.vbr_bits)
            }
        } else {
            (ImageForm::String, 8 * self.len)
        };
        ImageContent {
            len: self.len,
            form,
            bits,
        }
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn the_form_follows_the_content() {
        let form = |bytes: &[u8]| ImageContent::of(bytes).form;
        assert_eq!(form(b""), ImageForm::Zero);
        assert_eq!(form(b"\0\0"), ImageForm::Zero);
        assert_eq!(form(b"x"), ImageForm::String);
        assert_eq!(form(b"abc\0"), ImageForm::CString(Field::Char6));
        assert_eq!(form(b"a c\0"), ImageForm::CString(Field::Fixed(7)));
        assert_eq!(form(b"\xffc\0"), ImageForm::CString(Field::Vbr(6)));
        assert_eq!(form(b"a\0c\0"), ImageForm::String);
        let split = {
            let mut scan = ImageScan::default();
            scan.push(b"\xff");
            scan.push(b"c");
            scan.push(b"\0");
            scan.finish()
        };
        assert_eq!(split, ImageContent::of(b"\xffc\0"));
        // Settled by an object file's first bytes: the same content as when read whole.
        let object: Vec<u8> = (0..10_000u32).map(|i| (i % 7) as u8).collect();
        let mut head = ImageScan::default();
        head.push(&object[..8]);
        assert!(head.settled());
        assert_eq!(head.finish_settled(10_000), ImageContent::of(&object));
        // Not settled while a C string is still possible, nor by zeros alone.
        for start in [&b"abc"[..], b"a\0", b"\0\0\0"] {
            let mut scan = ImageScan::default();
            scan.push(start);
            assert!(!scan.settled(), "{start:?}");
        }
        assert_eq!(split.bits, 12 + 12);
        assert_eq!(split.count(), 2);
    }

    #[test]
    fn long_images_are_told_apart_across_blocks() {
        // 7-bit text with a few control characters, then its NUL: 9,000 bytes, past a block.
        let mut text: Vec<u8> = (0..9000u32).map(|i| b"ab c\n"[(i % 5) as usize]).collect();
        *text.last_mut().unwrap() = 0;
        let content = ImageContent::of(&text);
        assert_eq!(content.form, ImageForm::CString(Field::Fixed(7)));
        let mut one_by_one = ImageScan::default();
        text.iter()
            .for_each(|byte| one_by_one.push(std::slice::from_ref(byte)));
        assert_eq!(one_by_one.finish(), content);
        // A byte of 0x80 past the first block makes the text 6-bit VBRs: 12 bits for each
        // byte of 32 or more, 6 for each below.
        text[5000] = 0x80;
        let content = ImageContent::of(&text);
        assert_eq!(content.form, ImageForm::CString(Field::Vbr(6)));
        let small = text[..8999].iter().filter(|&&b| b < 32).count() as u64;
        assert_eq!(content.bits, 12 * 8999 - 6 * small);
        // A NUL before the last byte makes it a string.
        text[7000] = 0;
        assert_eq!(ImageContent::of(&text).form, ImageForm::String);
    }
}
