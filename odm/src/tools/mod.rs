//! The `odm` command's tools (feature `cli`): moving data in and out in the formats of
//! MongoDB's tools, looking at and maintaining a database file, and one-shot queries.
//!
//! | module | concept |
//! |---|---|
//! | `extjson` | Extended JSON read (every form `mongoimport` reads) and written (relaxed, canonical) |
//! | `clock` | calendar arithmetic for the date formats |

pub mod clock;
pub mod extjson;
