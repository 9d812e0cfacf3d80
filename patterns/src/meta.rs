//! Pattern parameters recorded with the data (the `PatternMeta` model, one document per pattern
//! instance in `patterns_meta`), and the patterns' errors: reopening with other parameters is
//! [`PatternError::ParametersChanged`], which names only the parameters that differ.

use bson::Document;
use odm::Txn;
use serde::{Deserialize, Serialize};

/// The parameters one pattern instance was created with, under `"{pattern}:{name}"`.
#[derive(Debug, Serialize, Deserialize, odm::Document)]
#[odm(collection = "patterns_meta")]
struct PatternMeta {
    #[odm(id)]
    id: String,
    /// Each pattern's own parameters (bucket size, variant, ...), compared as a whole.
    parameters: Document,
}

/// What a pattern operation can fail with.
///
/// ```
/// use odm_patterns::{Inbox, InboxVariant, PatternError};
///
/// let db = odm::Database::in_memory()?;
/// Inbox::<String>::open(&db, "mail", 50, InboxVariant::OpenBucket)?;
/// // Buckets of 50 cannot be read as buckets of 20: the stored parameters win.
/// let err = Inbox::<String>::open(&db, "mail", 20, InboxVariant::OpenBucket).unwrap_err();
/// assert!(matches!(err, PatternError::ParametersChanged { .. }), "{err}");
/// # Ok::<(), PatternError>(())
/// ```
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

/// Records `parameters` for the pattern instance `name`, or checks them against the recorded
/// ones; the difference is [`PatternError::ParametersChanged`].
pub(crate) fn record(
    txn: &mut Txn<'_, '_>,
    pattern: &'static str,
    name: &str,
    parameters: Document,
) -> Result<(), PatternError> {
    let id = format!("{pattern}:{name}");
    let mut metas = txn.collection::<PatternMeta>()?;
    match metas.get(&id.clone().into())? {
        Some(stored) if stored.parameters != parameters => {
            // Only the parameters that differ, so the message names what changed.
            let differ = |a: &Document, b: &Document| -> Document {
                a.iter()
                    .filter(|(k, v)| b.get(k.as_str()) != Some(*v))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            };
            Err(PatternError::ParametersChanged {
                pattern,
                name: name.to_owned(),
                stored: differ(&stored.parameters, &parameters).to_string(),
                requested: differ(&parameters, &stored.parameters).to_string(),
            })
        }
        Some(_) => Ok(()),
        None => {
            metas.insert_one(&PatternMeta { id, parameters })?;
            Ok(())
        }
    }
}
