//! MongoDB's `distinct`: the values a key takes among documents. Rules: an array counts
//! element by element (as the key's path reaches into it); values equal under MongoDB's
//! comparison (`1` and `1.0`), or under the collation for strings, count once, the first found
//! kept; the values come out in sort order.

use bson::{Bson, RawBson, RawDocument};

use super::selection::parse_collation;
use crate::collation::Collation;
use crate::error::{Error, Result};
use crate::order::compare_in;
use crate::path::Path;
use crate::value_set::ValueIndex;

/// The distinct values of one key, gathered document by document.
#[derive(Debug)]
pub struct Distinct {
    key: Path,
    collation: Option<std::sync::Arc<Collation>>,
    seen: ValueIndex,
    values: Vec<RawBson>,
}

impl Distinct {
    /// Values of `key`, strings compared under `collation` when given (a collation document,
    /// checked here).
    pub fn new(key: &str, collation: Option<&bson::Document>) -> Result<Distinct> {
        Ok(Distinct::with(key, parse_collation(collation)?))
    }

    pub(crate) fn with(key: &str, collation: Option<std::sync::Arc<Collation>>) -> Distinct {
        Distinct {
            key: Path::new(key),
            collation,
            seen: ValueIndex::default(),
            values: Vec::new(),
        }
    }

    /// Adds the values `doc` holds under the key.
    pub fn add(&mut self, doc: &RawDocument) -> Result<()> {
        let collation = self.collation.as_deref();
        for v in self.key.elements_raw(doc) {
            let owned = RawBson::from(v);
            let value = Bson::try_from(owned.clone()).map_err(|e| Error::corrupt("distinct", e))?;
            if self.seen.position(&value, self.values.len(), collation).1 {
                self.values.push(owned);
            }
        }
        Ok(())
    }

    /// The values, in sort order.
    pub fn finish(mut self) -> Result<Vec<Bson>> {
        let collation = self.collation.as_deref();
        self.values
            .sort_by(|a, b| compare_in(a.as_raw_bson_ref(), b.as_raw_bson_ref(), collation));
        self.values
            .into_iter()
            .map(|v| Bson::try_from(v).map_err(|e| Error::corrupt("distinct", e)))
            .collect()
    }
}
