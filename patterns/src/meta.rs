//! Pattern parameters recorded with the data, and the patterns' errors.

use bson::{Bson, Document, doc};
use odm::engine::WriteTxn;

/// The collection where patterns record their parameters.
pub const META_COLLECTION: &str = "patterns_meta";

/// What a pattern operation can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PatternError {
    #[error(transparent)]
    Odm(#[from] odm::Error),
    /// The pattern's stored parameters differ from those it is opened with.
    #[error(
        "{pattern} `{name}` is stored with {stored}; opening it with {requested} would reorder its data"
    )]
    ParametersChanged {
        pattern: &'static str,
        name: String,
        stored: String,
        requested: String,
    },
    /// The operation does not apply (a missing node, a move into its own subtree, an id
    /// containing a separator); nothing was changed.
    #[error("{pattern} `{name}`: {reason}")]
    Refused {
        pattern: &'static str,
        name: String,
        reason: String,
    },
    /// A stored document is not what the pattern wrote.
    #[error("{pattern} `{name}`: {reason}")]
    Damaged {
        pattern: &'static str,
        name: String,
        reason: String,
    },
}

impl From<odm::engine::Error> for PatternError {
    fn from(e: odm::engine::Error) -> Self {
        PatternError::Odm(e.into())
    }
}

/// Records `parameters` for the pattern instance `key`, or checks them against the recorded
/// ones; the difference is [`PatternError::ParametersChanged`].
pub(crate) fn record(
    txn: &mut WriteTxn<'_>,
    pattern: &'static str,
    name: &str,
    parameters: Document,
) -> Result<(), PatternError> {
    let id = Bson::String(format!("{pattern}:{name}"));
    if let Some(stored) = txn.get(META_COLLECTION, &id)? {
        let stored = Document::try_from(stored.as_ref()).map_err(|e| PatternError::Damaged {
            pattern,
            name: name.to_owned(),
            reason: e.to_string(),
        })?;
        let stored = stored
            .get_document("parameters")
            .cloned()
            .unwrap_or_default();
        if stored != parameters {
            return Err(PatternError::ParametersChanged {
                pattern,
                name: name.to_owned(),
                stored: stored.to_string(),
                requested: parameters.to_string(),
            });
        }
        return Ok(());
    }
    txn.insert_one(
        META_COLLECTION,
        doc! { "_id": id, "parameters": parameters },
    )?;
    Ok(())
}
