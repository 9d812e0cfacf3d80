//! The pages written since the last checkpoint, held in memory instead of the database file.
//!
//! Why: a durable commit writes a dozen pages all over the file, and on the machines we measure
//! each write into the OS cache costs about 5 µs (`strace` and a loop of 13 scattered 4 KiB
//! `pwrite`s: 65-75 µs without any sync), half of SQLite's whole commit. The log already holds
//! every such page durably, so the file needs them only at the next checkpoint, where each
//! page is written once however often it changed, in the file's order.
//!
//! Rules:
//! - **Extents never overlap.** A write replaces the bytes it covers; what an older extent held
//!   before or after it stays, cut to size. So a read's answer is the file's bytes with every
//!   extent it meets laid over them, in any order.
//! - **Trailing zeros are counted, not kept**, as in the log: redb pages are mostly free space.
//! - **A cut length cuts the extents**: bytes past the end are gone, as from a file, and a file
//!   grown again reads zeros there.

use std::collections::BTreeMap;

/// Bytes written at one offset: `kept`, then zeros up to `len`.
#[derive(Debug)]
struct Extent {
    kept: Vec<u8>,
    len: u64,
}

impl Extent {
    fn new(data: &[u8], kept: usize) -> Extent {
        Extent {
            kept: data[..kept].to_vec(),
            len: data.len() as u64,
        }
    }

    /// Bytes `from..to` of this extent (offsets within it).
    fn slice(&self, from: u64, to: u64) -> Extent {
        let kept = self.kept.len() as u64;
        Extent {
            kept: self.kept[from.min(kept) as usize..to.min(kept) as usize].to_vec(),
            len: to - from,
        }
    }

    /// Lays bytes `from..from + out.len()` of this extent over `out`.
    fn copy_to(&self, from: u64, out: &mut [u8]) {
        let kept = self.kept.len() as u64;
        let split = (kept.saturating_sub(from) as usize).min(out.len());
        if split > 0 {
            out[..split].copy_from_slice(&self.kept[from as usize..from as usize + split]);
        }
        out[split..].fill(0);
    }
}

/// The extents by offset.
#[derive(Debug, Default)]
pub(super) struct Overlay {
    extents: BTreeMap<u64, Extent>,
}

impl Overlay {
    pub(super) fn is_empty(&self) -> bool {
        self.extents.is_empty()
    }

    /// The offsets of the extents that share a byte with `offset..end`, in order.
    fn meeting(&self, offset: u64, end: u64) -> Vec<u64> {
        let before = self
            .extents
            .range(..offset)
            .next_back()
            .filter(|(start, extent)| **start + extent.len > offset)
            .map(|(start, _)| *start);
        before
            .into_iter()
            .chain(self.extents.range(offset..end).map(|(start, _)| *start))
            .collect()
    }

    fn put(&mut self, offset: u64, extent: Extent) {
        self.extents.insert(offset, extent);
    }

    fn take(&mut self, offset: u64) -> Extent {
        self.extents.remove(&offset).expect("an extent just found")
    }

    /// Records `data` written at `offset`, over whatever was written there before. `kept` is
    /// the length of `data` before its trailing zeros.
    pub(super) fn write(&mut self, offset: u64, data: &[u8], kept: usize) {
        if data.is_empty() {
            return;
        }
        let end = offset + data.len() as u64;
        // redb rewrites a page where it wrote it before, at the same size: reuse its buffer.
        if let Some(extent) = self.extents.get_mut(&offset)
            && extent.len == data.len() as u64
        {
            extent.kept.clear();
            extent.kept.extend_from_slice(&data[..kept]);
            return;
        }
        self.forget(offset, end);
        self.put(offset, Extent::new(data, kept));
    }

    /// Drops the bytes `offset..end`: what extents held before and after them stays, cut to
    /// size.
    fn forget(&mut self, offset: u64, end: u64) {
        for start in self.meeting(offset, end) {
            let old = self.take(start);
            if start < offset {
                self.put(start, old.slice(0, offset - start));
            }
            if start + old.len > end {
                self.put(end, old.slice(end - start, old.len));
            }
        }
    }

    /// Cuts every extent at `len`, as the file is cut.
    pub(super) fn set_len(&mut self, len: u64) {
        for start in self.meeting(len, u64::MAX) {
            let old = self.take(start);
            if start < len {
                self.put(start, old.slice(0, len - start));
            }
        }
    }

    /// Whether the extents hold every byte of `offset..offset + len` (so the file need not be
    /// read).
    pub(super) fn covers(&self, offset: u64, len: usize) -> bool {
        let end = offset + len as u64;
        let mut next = offset;
        for start in self.meeting(offset, end) {
            if start > next {
                return false;
            }
            next = start + self.extents[&start].len;
        }
        next >= end
    }

    /// Lays the extents' bytes over `out`, which holds the file's bytes from `offset`.
    pub(super) fn read(&self, offset: u64, out: &mut [u8]) {
        let end = offset + out.len() as u64;
        for start in self.meeting(offset, end) {
            let extent = &self.extents[&start];
            let from = offset.max(start);
            let to = end.min(start + extent.len);
            let target = &mut out[(from - offset) as usize..(to - offset) as usize];
            extent.copy_to(from - start, target);
        }
    }

    /// Every extent, in the file's order, as (offset, kept bytes, zeros after them).
    pub(super) fn extents(&self) -> impl Iterator<Item = (u64, &[u8], u64)> {
        self.extents.iter().map(|(offset, extent)| {
            let zeros = extent.len - extent.kept.len() as u64;
            (*offset, extent.kept.as_slice(), zeros)
        })
    }

    pub(super) fn clear(&mut self) {
        self.extents.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::Overlay;
    use proptest::prelude::*;

    /// A change to the file: bytes written at an offset (into the overlay, or into the file
    /// directly, the overlay forgetting them), or a new length.
    #[derive(Debug, Clone)]
    enum Change {
        Write(u64, Vec<u8>),
        Direct(u64, Vec<u8>),
        SetLen(u64),
    }

    /// Bytes with runs of zeros in them, and often ending in zeros, like redb's pages.
    fn bytes() -> impl Strategy<Value = Vec<u8>> {
        (
            prop::collection::vec(prop_oneof![Just(0u8), 1u8..=255], 0..40),
            0usize..40,
        )
            .prop_map(|(mut data, zeros)| {
                data.resize(data.len() + zeros, 0);
                data
            })
    }

    fn change() -> impl Strategy<Value = Change> {
        prop_oneof![
            4 => (0u64..120, bytes()).prop_map(|(offset, data)| Change::Write(offset, data)),
            1 => (0u64..120, bytes()).prop_map(|(offset, data)| Change::Direct(offset, data)),
            1 => (0u64..160).prop_map(Change::SetLen),
        ]
    }

    fn write_at(bytes: &mut Vec<u8>, at: usize, data: &[u8]) {
        if bytes.len() < at + data.len() {
            bytes.resize(at + data.len(), 0);
        }
        bytes[at..at + data.len()].copy_from_slice(data);
    }

    proptest! {
        /// The file's bytes under the overlay read as the file would had every change gone to
        /// it; where the overlay claims to cover a range, it alone answers.
        #[test]
        fn the_file_under_the_overlay_reads_as_if_written(
            base in prop::collection::vec(1u8..=255, 0..100),
            changes in prop::collection::vec(change(), 0..24),
            reads in prop::collection::vec((0u64..160, 0usize..80), 1..16),
        ) {
            // `file` is what the database file holds (its length kept, its bytes not written);
            // `model` is what it would hold had every write gone to it.
            let (mut file, mut model) = (base.clone(), base);
            let mut overlay = Overlay::default();
            for change in &changes {
                match change {
                    Change::Write(offset, data) => {
                        overlay.write(*offset, data, super::super::nonzero_prefix(data));
                        let end = *offset as usize + data.len();
                        if end > file.len() {
                            file.resize(end, 0);
                        }
                        write_at(&mut model, *offset as usize, data);
                    }
                    Change::Direct(offset, data) => {
                        write_at(&mut file, *offset as usize, data);
                        write_at(&mut model, *offset as usize, data);
                        overlay.forget(*offset, *offset + data.len() as u64);
                    }
                    Change::SetLen(len) => {
                        overlay.set_len(*len);
                        file.resize(*len as usize, 0);
                        model.resize(*len as usize, 0);
                    }
                }
            }
            prop_assert_eq!(file.len(), model.len());
            for (offset, len) in reads {
                let (start, end) = (offset as usize, offset as usize + len);
                if end > model.len() {
                    continue;
                }
                let mut out = file[start..end].to_vec();
                overlay.read(offset, &mut out);
                prop_assert_eq!(&out, &model[start..end], "read {}..{}", start, end);
                if overlay.covers(offset, len) {
                    let mut alone = vec![0xEE; len];
                    overlay.read(offset, &mut alone);
                    prop_assert_eq!(&alone, &model[start..end], "covered {}..{}", start, end);
                }
            }
            // Spilled in order, the extents make the file the model.
            for (offset, kept, zeros) in overlay.extents() {
                let mut page = kept.to_vec();
                page.resize(kept.len() + zeros as usize, 0);
                write_at(&mut file, offset as usize, &page);
            }
            prop_assert_eq!(file, model);
        }
    }

    #[test]
    fn a_rewritten_page_keeps_one_extent_and_its_new_bytes() {
        let mut overlay = Overlay::default();
        overlay.write(4096, &[7; 4096], 4096);
        let mut page = vec![0u8; 4096];
        page[..2].copy_from_slice(&[1, 2]);
        overlay.write(4096, &page, 2);
        let extents: Vec<_> = overlay.extents().collect();
        assert_eq!(extents, vec![(4096, &[1u8, 2][..], 4094)]);
        assert!(overlay.covers(4096, 4096));
        assert!(!overlay.covers(4095, 2));
    }
}
