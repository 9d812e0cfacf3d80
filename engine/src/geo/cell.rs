//! Cells: the quadtree over a rectangle of coordinates that geospatial index keys name.
//!
//! Level 0 is the whole rectangle (longitude and latitude for `2dsphere`, the index's `min`
//! and `max` for `2d`); each level splits a cell into four, down to [`FINEST`]. A cell's id
//! holds its path (two bits a level, x then y), then a one bit, then zeros, as S2's cell ids
//! do: a cell's descendants are exactly the ids between its [`Cell::range_min`] and
//! [`Cell::range_max`], so one index range reads everything inside a cell.

use super::shape::Position;

/// The finest level: cells of 2⁻²⁶ of the rectangle's side, about 60 cm of longitude at the
/// equator for `2dsphere`.
pub const FINEST: u8 = 26;

/// A cell of the quadtree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cell(u64);

/// The rectangle a quadtree divides.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Grid {
    pub low: Position,
    pub high: Position,
}

impl Grid {
    /// Longitude and latitude: the grid of `2dsphere` keys.
    pub const SPHERE: Grid = Grid {
        low: Position {
            x: -180.0,
            y: -90.0,
        },
        high: Position { x: 180.0, y: 90.0 },
    };

    /// The finest cell holding `p`, which the caller has checked lies in the grid.
    pub fn leaf(&self, p: Position) -> Cell {
        let scale = f64::from(1u32 << FINEST);
        let fraction = |v: f64, low: f64, high: f64| ((v - low) / (high - low)).clamp(0.0, 1.0);
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // clamped to [0, 2^26]
        let step = |f: f64| ((f * scale) as u64).min((1 << FINEST) - 1);
        let i = step(fraction(p.x, self.low.x, self.high.x));
        let j = step(fraction(p.y, self.low.y, self.high.y));
        let mut path = 0u64;
        for bit in (0..FINEST).rev() {
            path = (path << 2) | (((i >> bit) & 1) << 1) | ((j >> bit) & 1);
        }
        Cell((path << 1) | 1)
    }

    /// The rectangle a cell covers, as its low and high corners.
    pub fn bounds(&self, cell: Cell) -> (Position, Position) {
        let level = cell.level();
        let (i, j) = cell.coordinates();
        let side = f64::from(1u32 << level);
        #[allow(clippy::cast_precision_loss)]
        let corner = |k: u64, low: f64, high: f64| low + (high - low) * (k as f64) / side;
        (
            Position {
                x: corner(i, self.low.x, self.high.x),
                y: corner(j, self.low.y, self.high.y),
            },
            Position {
                x: corner(i + 1, self.low.x, self.high.x),
                y: corner(j + 1, self.low.y, self.high.y),
            },
        )
    }

    /// The cells of the finest level that needs at most `max_cells` (at least one) to cover
    /// the rectangle from `low` to `high`, clipped to the grid.
    pub fn cover(&self, low: Position, high: Position, max_cells: usize) -> Vec<Cell> {
        let (low, high) = (self.leaf(low), self.leaf(high));
        let count = |level: u8| {
            let ((a, b), (c, d)) = (
                low.parent(level).coordinates(),
                high.parent(level).coordinates(),
            );
            (c.saturating_sub(a) + 1).saturating_mul(d.saturating_sub(b) + 1)
        };
        let limit = u64::try_from(max_cells.max(1)).unwrap_or(u64::MAX);
        let level = (0..=FINEST).rev().find(|&l| count(l) <= limit).unwrap_or(0);
        let ((lo_i, lo_j), (hi_i, hi_j)) = (
            low.parent(level).coordinates(),
            high.parent(level).coordinates(),
        );
        let mut out = Vec::new();
        for i in lo_i..=hi_i {
            for j in lo_j..=hi_j {
                out.push(Cell::from_coordinates(level, i, j));
            }
        }
        out
    }
}

impl Cell {
    /// The whole grid.
    pub const ROOT: Cell = Cell(1 << (2 * FINEST as u32));

    pub fn id(self) -> i64 {
        #[allow(clippy::cast_possible_wrap)] // ids use 53 bits
        let id = self.0 as i64;
        id
    }

    pub fn from_id(id: i64) -> Option<Cell> {
        let id = u64::try_from(id).ok()?;
        let cell = Cell(id);
        (id != 0
            && id <= Cell::ROOT.range_max().0
            && cell.lowest_bit().trailing_zeros().is_multiple_of(2))
        .then_some(cell)
    }

    fn lowest_bit(self) -> u64 {
        self.0 & self.0.wrapping_neg()
    }

    pub fn level(self) -> u8 {
        #[allow(clippy::cast_possible_truncation)] // at most 26
        let level = FINEST - (self.lowest_bit().trailing_zeros() / 2) as u8;
        level
    }

    /// Its ancestor at `level` (itself at its own level or finer).
    #[must_use]
    pub fn parent(self, level: u8) -> Cell {
        if level >= self.level() {
            return self;
        }
        let bit = 1u64 << (2 * u32::from(FINEST - level));
        Cell((self.0 & !(2 * bit - 1)) | bit)
    }

    /// The ancestors from the root down to its parent.
    pub fn ancestors(self) -> impl Iterator<Item = Cell> {
        (0..self.level()).map(move |level| self.parent(level))
    }

    /// The smallest id of its descendants.
    #[must_use]
    pub fn range_min(self) -> Cell {
        Cell(self.0 - self.lowest_bit() + 1)
    }

    /// The largest id of its descendants.
    #[must_use]
    pub fn range_max(self) -> Cell {
        Cell(self.0 + self.lowest_bit() - 1)
    }

    fn coordinates(self) -> (u64, u64) {
        let level = self.level();
        let path = self.0 >> (2 * u32::from(FINEST - level) + 1);
        let (mut i, mut j) = (0, 0);
        for step in (0..level).rev() {
            i = (i << 1) | ((path >> (2 * step + 1)) & 1);
            j = (j << 1) | ((path >> (2 * step)) & 1);
        }
        (i, j)
    }

    fn from_coordinates(level: u8, i: u64, j: u64) -> Cell {
        let mut path = 0u64;
        for bit in (0..level).rev() {
            path = (path << 2) | (((i >> bit) & 1) << 1) | ((j >> bit) & 1);
        }
        let shift = 2 * u32::from(FINEST - level);
        Cell(((path << 1) | 1) << shift)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// A leaf lies in every ancestor's range and in its rectangle.
        #[test]
        fn leaves_lie_in_their_ancestors(x in -180.0f64..180.0, y in -90.0f64..90.0) {
            let grid = Grid::SPHERE;
            let leaf = grid.leaf(Position { x, y });
            prop_assert_eq!(leaf.level(), FINEST);
            prop_assert_eq!(Cell::from_id(leaf.id()), Some(leaf));
            for ancestor in leaf.ancestors() {
                prop_assert!(ancestor.range_min() <= leaf && leaf <= ancestor.range_max());
                let (low, high) = grid.bounds(ancestor);
                prop_assert!(low.x <= x && x <= high.x && low.y <= y && y <= high.y);
            }
        }

        /// A cover holds every point of the rectangle it covers.
        #[test]
        fn covers_hold_their_rectangle(
            x in -180.0f64..180.0, y in -90.0f64..90.0,
            w in 0.0f64..50.0, h in 0.0f64..50.0,
            fx in 0.0f64..=1.0, fy in 0.0f64..=1.0,
        ) {
            let grid = Grid::SPHERE;
            let low = Position { x, y };
            let high = Position { x: (x + w).min(180.0), y: (y + h).min(90.0) };
            let cells = grid.cover(low, high, 8);
            prop_assert!(!cells.is_empty() && cells.len() <= 8);
            let inside = grid.leaf(Position {
                x: low.x + fx * (high.x - low.x),
                y: low.y + fy * (high.y - low.y),
            });
            prop_assert!(cells.iter().any(|c| c.range_min() <= inside && inside <= c.range_max()));
        }
    }
}
