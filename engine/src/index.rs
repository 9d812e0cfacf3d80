//! Index specifications and the entries an index holds for a document.
//!
//! An index maps the encoded key of each document ([`crate::keys`]) to its `_id`:
//! - a non-unique index stores `key ++ encode(_id)` with the key types as the value, so equal
//!   keys stay distinct entries ordered by `_id`;
//! - a unique index stores `key` with `encode(_id) ++ key types` as the value, so a second
//!   document with the same key is found by one lookup.
//!
//! The key types (`keys::types_of`) are empty for keys without numbers or nulls and
//! for multikey documents. A key document's values are `1`, `-1` (any non-zero number, its sign
//! the direction), `"hashed"` on one field (its key is the value's hash, see `hashed`),
//! `"text"` (see `text`), `"2dsphere"` or `"2d"` (its keys are cells, see `geo`); MongoDB's
//! other index types (`geoHaystack`, wildcard) are refused by name. A partial index holds only
//! the documents its filter matches.
//!
//! Multikey: a document gives one key per array element (a compound index over one array gives
//! one key per element; over arrays at the same path, the cartesian product). Keys repeated in
//! one document are one entry. Two fields reaching different arrays ("parallel arrays") are
//! refused. A sparse index skips documents that have none of its fields; elsewhere a missing
//! field is indexed as `null`.

use std::time::Duration;

use std::sync::Arc;

use bson::{Bson, Document, RawBsonRef, RawDocument};

use crate::geo::GeoIndex;
use crate::query::Filter;
use crate::text::{TextError, TextSpec};

use crate::collation::Collation;
use crate::decode::render;
use crate::error::IndexSpecError;
use crate::keys::{self, Direction};
use crate::path::{DamagedElement, KeyValues, Path, key_values};

/// The name MongoDB gives the primary index.
pub const ID_INDEX_NAME: &str = "_id_";

/// The name of the index that keeps a collection's `_id`s unique under its default collation
/// (see [`IndexSpec::collated_id`]). It is part of the `_id_` index as users see it: never
/// listed, dropped or created by that name.
pub(crate) const COLLATED_ID_INDEX_NAME: &str = "_id_collated";

/// The most keys one document may give one index; a guard against cartesian blow-ups.
pub const MAX_KEYS_PER_DOCUMENT: usize = 100_000;

/// What an index is: its key fields and options. Two specs are the same index when they are
/// equal, `background` aside; the name defaults to MongoDB's (`a_1_b_-1`).
#[derive(Debug, Clone)]
pub struct IndexSpec {
    name: String,
    keys: Vec<(Path, Direction)>,
    unique: bool,
    sparse: bool,
    expire_after: Option<Duration>,
    partial: Option<PartialFilter>,
    /// The position in `keys` of the one hashed field, if any: its key is MongoDB's hash of the
    /// value ([`crate::hashed`]), stored ascending, which serves equality and `$in` only.
    hashed: Option<usize>,
    /// A text index's definition; `keys` then hold `_fts` and `_ftsx` where the text fields
    /// were (see the module documentation).
    text: Option<Arc<TextSpec>>,
    /// A geo index's geo fields (their positions in `keys`) and kind: their keys are cell ids
    /// (see [`crate::geo`]), stored ascending.
    geo: Option<(Vec<usize>, GeoIndex)>,
    /// `background` as the index was created with it: MongoDB builds every index the same way
    /// since 4.2 and ignores the flag, but keeps it and lists it, and so does this engine. It
    /// is no part of the index's identity.
    background: Option<bool>,
    /// The collation its string keys are sort keys under (see [`crate::collation`]); `None`
    /// for binary strings.
    collation: Option<Arc<Collation>>,
    /// Whether it was created with the `simple` collation named, which keeps binary strings on
    /// a collection with a default collation (see [`IndexSpec::inheriting`]).
    simple_collation: bool,
}

impl PartialEq for IndexSpec {
    fn eq(&self, other: &IndexSpec) -> bool {
        self.name == other.name
            && self.keys == other.keys
            && self.unique == other.unique
            && self.sparse == other.sparse
            && self.expire_after == other.expire_after
            && self.partial == other.partial
            && self.hashed == other.hashed
            && self.text == other.text
            && self.geo == other.geo
            && self.collation.as_deref() == other.collation.as_deref()
    }
}

/// A partial index's filter: only documents it matches are indexed.
#[derive(Debug, Clone)]
pub struct PartialFilter {
    document: Document,
    filter: Arc<Filter>,
}

impl PartialEq for PartialFilter {
    fn eq(&self, other: &Self) -> bool {
        self.document == other.document
    }
}

impl PartialFilter {
    pub fn document(&self) -> &Document {
        &self.document
    }

    pub(crate) fn filter(&self) -> &Filter {
        &self.filter
    }
}

impl IndexSpec {
    /// An index over `fields` in order, each with its direction.
    pub fn new<'a>(
        fields: impl IntoIterator<Item = (&'a str, Direction)>,
    ) -> Result<IndexSpec, IndexSpecError> {
        let mut keys: Vec<(Path, Direction)> = Vec::new();
        for (dotted, direction) in fields {
            let path = Path::parse(dotted)?;
            if keys.iter().any(|(p, _)| *p == path) {
                return Err(IndexSpecError::RepeatedPath {
                    path: dotted.to_owned(),
                });
            }
            keys.push((path, direction));
        }
        if keys.is_empty() {
            return Err(IndexSpecError::NoKeys);
        }
        let name = default_name(&keys, None);
        Ok(IndexSpec {
            name,
            keys,
            unique: false,
            sparse: false,
            expire_after: None,
            partial: None,
            hashed: None,
            text: None,
            geo: None,
            background: None,
            collation: None,
            simple_collation: false,
        })
    }

    /// A single-field hashed index, `{path: "hashed"}`.
    pub fn hashed(path: &str) -> Result<IndexSpec, IndexSpecError> {
        IndexSpec::from_keys_document(&bson::doc! { path: "hashed" })
    }

    /// A single-field ascending index.
    pub fn ascending(path: &str) -> Result<IndexSpec, IndexSpecError> {
        IndexSpec::new([(path, Direction::Ascending)])
    }

    /// Parses MongoDB's key document, `{a: 1, b: -1}` or with one hashed field,
    /// `{a: 1, b: "hashed"}`. A key value is a non-zero number (its sign gives the direction) or
    /// the string `"hashed"`, `"text"`, `"2dsphere"` or `"2d"`; MongoDB's other index types
    /// (`geoHaystack`, wildcard) are refused by name, and anything else as MongoDB refuses it.
    pub fn from_keys_document(keys: &Document) -> Result<IndexSpec, IndexSpecError> {
        IndexSpec::from_key_pattern(keys, &Document::new())
    }

    /// [`IndexSpec::from_keys_document`] with the index document's options a text index reads
    /// (`weights`, `default_language`, `language_override`).
    fn from_key_pattern(keys: &Document, index: &Document) -> Result<IndexSpec, IndexSpecError> {
        if is_text_pattern(keys) {
            return text_index(keys, index);
        }
        let mut fields = Vec::new();
        let mut hashed = Vec::new();
        let mut geo: Vec<(usize, bool)> = Vec::new();
        for (position, (path, value)) in keys.iter().enumerate() {
            let direction = match value {
                Bson::Int32(d) if *d != 0 => Direction::of_sign(i64::from(*d)),
                Bson::Int64(d) if *d != 0 => Direction::of_sign(*d),
                Bson::Double(d) if *d != 0.0 && !d.is_nan() => {
                    Direction::of_sign(if *d < 0.0 { -1 } else { 1 })
                }
                Bson::Decimal128(d) => match crate::number::Number::from_decimal128(*d) {
                    crate::number::Number::Finite(f) if !f.is_zero() => {
                        Direction::of_sign(if f.negative { -1 } else { 1 })
                    }
                    crate::number::Number::NegInfinity => Direction::Descending,
                    crate::number::Number::PosInfinity => Direction::Ascending,
                    _ => return Err(bad_key_value(path, &Bson::Int32(0))),
                },
                Bson::String(kind) if kind == "hashed" => {
                    hashed.push(position);
                    Direction::Ascending
                }
                Bson::String(kind) if kind == "2dsphere" || kind == "2d" => {
                    geo.push((position, kind == "2dsphere"));
                    Direction::Ascending
                }
                other => return Err(bad_key_value(path, other)),
            };
            if path == "$**" || path.ends_with(".$**") {
                return Err(IndexSpecError::UnsupportedKind {
                    path: path.clone(),
                    kind: "wildcard".into(),
                });
            }
            fields.push((path.as_str(), direction));
        }
        if hashed.len() > 1 {
            return Err(IndexSpecError::SeveralHashed {
                fields: hashed.len(),
            });
        }
        let mut spec = IndexSpec::new(fields)?;
        spec.hashed = hashed.first().copied();
        spec.geo = geo_fields(&geo, !hashed.is_empty(), index)?;
        if spec.hashed.is_some() || spec.geo.is_some() {
            spec.name = default_name(&spec.keys, spec.hashed);
            if let Some((positions, kind)) = &spec.geo {
                spec.name = geo_name(&spec.keys, positions, kind.kind());
            }
        }
        Ok(spec)
    }

    /// Reads an index as MongoDB describes one (`createIndexes`' `indexes` entries,
    /// `listIndexes`' output): `key`, and `name`, `unique`, `sparse`, `expireAfterSeconds`,
    /// `partialFilterExpression`, `collation` when present. The bookkeeping fields MongoDB adds
    /// (`v`, `ns`, `background`) and the deprecated `dropDups` are ignored; an option this
    /// engine does not build (`hidden`, `weights`, ...) is [`IndexSpecError::UnsupportedOption`], never
    /// silently dropped: an index read back without it would be another index. A field
    /// MongoDB does not know is [`IndexSpecError::UnknownOption`], as MongoDB refuses it.
    pub fn from_document(index: &Document) -> Result<IndexSpec, IndexSpecError> {
        let key = match index.get("key") {
            Some(Bson::Document(key)) => key,
            Some(other) => return Err(wrong_type("key", "an object", other)),
            None => return Err(IndexSpecError::MissingKey),
        };
        let mut spec = IndexSpec::from_key_pattern(key, index)?;
        // The `_id` index takes no options (MongoDB: any field but these is refused, `false`
        // values and `background` too).
        if spec.keys.len() == 1 && spec.keys[0] == (Path::new("_id"), Direction::Ascending) {
            let allowed = ["key", "name", "v", "ns", "collation"];
            if let Some(field) = index.keys().find(|k| !allowed.contains(&k.as_str())) {
                return Err(IndexSpecError::IdIndexOption {
                    field: field.clone(),
                });
            }
        }
        match index.get("name") {
            None => {}
            Some(Bson::String(name)) => spec = spec.named(name),
            Some(other) => return Err(wrong_type("name", "a string", other)),
        }
        if option_flag(index, "unique")? {
            spec = spec.unique();
        }
        if option_flag(index, "sparse")? {
            spec = spec.sparse();
        }
        if index.contains_key("background") {
            spec.background = Some(option_flag(index, "background")?);
        }
        if let Some(value) = index.get("expireAfterSeconds") {
            spec = spec.expire_after(expire_after_seconds(value)?);
        }
        match index.get("partialFilterExpression") {
            None => {}
            Some(Bson::Document(filter)) => spec = spec.partial(filter.clone())?,
            Some(other) => return Err(wrong_type("partialFilterExpression", "an object", other)),
        }
        match index.get("collation") {
            None => {}
            Some(Bson::Document(collation)) => spec = spec.collated(collation)?,
            Some(other) => return Err(wrong_type("collation", "an object", other)),
        }
        for (option, value) in index {
            check_option_name(option)?;
            if TEXT_OPTIONS.contains(&option.as_str()) {
                check_text_option(&spec, option, value)?;
            }
            if GEO_OPTIONS.contains(&option.as_str()) && spec.geo.is_none() {
                return Err(IndexSpecError::BadGeo {
                    code: None,
                    reason: format!("`{option}` is an option of geo indexes only"),
                });
            }
        }
        Ok(spec)
    }

    /// The index with its strings keyed under `collation` (MongoDB's `collation` index
    /// option); the `simple` locale keeps binary strings. A hashed index hashes strings' sort
    /// keys. The `_id` index takes only its collection's collation (see
    /// `WriteTxn::create_index`).
    pub fn collated(mut self, collation: &Document) -> Result<Self, IndexSpecError> {
        let collation =
            Collation::parse(collation).map_err(|e| bad_option("collation", e.to_string()))?;
        if self.text.is_some() && collation.is_some() {
            return Err(IndexSpecError::BadText {
                reason: "Index type 'text' does not support collation".into(),
            });
        }
        self.simple_collation = collation.is_none();
        self.collation = collation;
        Ok(self)
    }

    /// The index as created on a collection whose default collation is `default`: with that
    /// collation when it names none, as MongoDB creates it. One created with the `simple`
    /// collation named stays binary.
    #[must_use]
    pub fn inheriting(mut self, default: Option<&Arc<Collation>>) -> Self {
        // Terms are folded by the text index's own rules, never by a collation.
        if self.collation.is_none() && !self.simple_collation && self.text.is_none() {
            self.collation = default.cloned();
        }
        self
    }

    /// The collation its string keys are under, if any.
    pub fn collation(&self) -> Option<&Arc<Collation>> {
        self.collation.as_ref()
    }

    /// Whether it was created with a collation named, `simple` included: the `_id` index
    /// asked for this way must name its collection's.
    pub fn names_collation(&self) -> bool {
        self.collation.is_some() || self.simple_collation
    }

    /// The `_id_` index as listed for a collection whose default collation is `collation`.
    pub(crate) fn under_collection_collation(mut self, collation: Option<&Arc<Collation>>) -> Self {
        self.collation = collation.cloned();
        self
    }

    /// The index that keeps `_id`s unique under a collection's default collation. The
    /// documents table keys `_id`s by their bytes, so `"a"` and `"A"` are two keys there;
    /// MongoDB's `_id` index, which takes the collection's collation, holds them as one. This
    /// unique index on `_id` under that collation refuses the second, and lets the planner
    /// bound string `_id`s under it.
    pub(crate) fn collated_id(collation: Arc<Collation>) -> IndexSpec {
        let mut spec = crate::schema::id_index_spec().named(COLLATED_ID_INDEX_NAME);
        spec.unique = true;
        spec.collation = Some(collation);
        spec
    }

    /// The name errors give it: `_id_` for the index that is part of it.
    pub(crate) fn reported_name(&self) -> &str {
        if self.is_collated_id() {
            ID_INDEX_NAME
        } else {
            &self.name
        }
    }

    /// Whether this is the index [`IndexSpec::collated_id`] makes.
    pub(crate) fn is_collated_id(&self) -> bool {
        self.name == COLLATED_ID_INDEX_NAME
    }

    #[must_use]
    pub fn unique(mut self) -> Self {
        self.unique = true;
        self
    }

    #[must_use]
    pub fn sparse(mut self) -> Self {
        self.sparse = true;
        self
    }

    /// Makes this a TTL index: documents expire `after` past the date in the key field.
    /// Validated when the index is created (one key field only).
    #[must_use]
    pub fn expire_after(mut self, after: Duration) -> Self {
        self.expire_after = Some(after);
        self
    }

    /// Makes this a partial index: only documents matching `filter` (MongoDB's
    /// `partialFilterExpression`) are indexed, and only queries that imply the filter use it.
    pub fn partial(mut self, filter: Document) -> Result<Self, IndexSpecError> {
        let parsed = Filter::parse(&filter).map_err(|e| IndexSpecError::InvalidPartialFilter {
            reason: e.to_string(),
        })?;
        self.partial = Some(PartialFilter {
            document: filter,
            filter: Arc::new(parsed),
        });
        Ok(self)
    }

    pub fn partial_filter(&self) -> Option<&PartialFilter> {
        self.partial.as_ref()
    }

    #[must_use]
    pub fn named(mut self, name: &str) -> Self {
        name.clone_into(&mut self.name);
        self
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn keys(&self) -> &[(Path, Direction)] {
        &self.keys
    }

    pub fn is_unique(&self) -> bool {
        self.unique
    }

    pub fn is_sparse(&self) -> bool {
        self.sparse
    }

    /// `background` as given when the index was created (see the field).
    pub fn background(&self) -> Option<bool> {
        self.background
    }

    /// This index with `background` recorded as given.
    #[must_use]
    pub fn with_background(mut self, background: Option<bool>) -> Self {
        self.background = background;
        self
    }

    pub fn ttl(&self) -> Option<Duration> {
        self.expire_after
    }

    /// The position of the hashed field among [`IndexSpec::keys`], if the index has one.
    pub fn hashed_field(&self) -> Option<usize> {
        self.hashed
    }

    /// A text index's definition; `None` for other indexes.
    pub fn text(&self) -> Option<&Arc<TextSpec>> {
        self.text.as_ref()
    }

    /// A text index's prefix fields: those before `_fts`, which a `$text` query must bind by
    /// equality; empty for other indexes.
    pub fn text_prefix(&self) -> &[(Path, Direction)] {
        match self.text_position() {
            Some(at) => &self.keys[..at],
            None => &[],
        }
    }

    /// A geo index's geo fields (positions in [`IndexSpec::keys`]) and kind.
    pub fn geo(&self) -> Option<(&[usize], &GeoIndex)> {
        self.geo
            .as_ref()
            .map(|(positions, kind)| (positions.as_slice(), kind))
    }

    /// Whether its keys are not the values of its fields (a text, geo or hashed index), so
    /// that no plan may read values from them or take their order for the values'.
    pub(crate) fn keys_values_differently(&self) -> bool {
        self.text.is_some() || self.geo.is_some() || self.hashed.is_some()
    }

    /// The position of `_fts` in the keys of a text index.
    fn text_position(&self) -> Option<usize> {
        self.text.as_ref()?;
        self.keys.iter().position(|(p, _)| p.as_str() == TEXT_KEY)
    }

    /// The key document, `{a: 1, b: -1}` (`"hashed"` for a hashed field).
    /// The index as MongoDB describes one (`listIndexes`, `$indexStats`' `spec`): `v`, `key`,
    /// `name`, and the options it has.
    pub fn to_document(&self) -> Document {
        let mut doc = bson::doc! {"v": 2, "key": self.keys_document(), "name": self.name()};
        if self.is_unique() {
            doc.insert("unique", true);
        }
        if self.is_sparse() {
            doc.insert("sparse", true);
        }
        if let Some(ttl) = self.ttl() {
            doc.insert("expireAfterSeconds", ttl.as_secs() as i64);
        }
        if let Some(partial) = self.partial_filter() {
            doc.insert("partialFilterExpression", partial.document().clone());
        }
        if let Some(background) = self.background {
            doc.insert("background", background);
        }
        if let Some(collation) = &self.collation {
            doc.insert("collation", collation.normalized().clone());
        }
        if let Some(text) = &self.text {
            text.options_into(&mut doc);
        }
        if let Some((_, geo)) = &self.geo {
            geo.options_into(&mut doc);
        }
        doc
    }

    pub fn keys_document(&self) -> Document {
        self.keys
            .iter()
            .enumerate()
            .map(|(i, (p, d))| {
                let value = if self.hashed == Some(i) {
                    Bson::String("hashed".into())
                } else if self.text.is_some() && p.as_str() == TEXT_KEY {
                    Bson::String("text".into())
                } else if let Some((positions, geo)) = &self.geo
                    && positions.contains(&i)
                {
                    Bson::String(geo.kind().into())
                } else {
                    Bson::Int32(d.as_i32())
                };
                (p.as_str().to_owned(), value)
            })
            .collect()
    }

    /// Checks the rules that do not depend on data.
    pub(crate) fn validate(&self) -> Result<(), IndexSpecError> {
        if self.name.is_empty() || self.name == ID_INDEX_NAME || self.is_collated_id() {
            return Err(IndexSpecError::BadName {
                name: self.name.clone(),
            });
        }
        if self.hashed.is_some() && self.unique {
            return Err(IndexSpecError::HashedUnique);
        }
        if self.expire_after.is_some() && self.keys.len() != 1 {
            return Err(IndexSpecError::TtlCompound {
                name: self.name.clone(),
                fields: self.keys.len(),
            });
        }
        if self.keys.len() == 1 && self.keys[0].0.as_str() == "_id" {
            if self.expire_after.is_some() {
                return Err(IndexSpecError::IdIndexOption {
                    field: "expireAfterSeconds".into(),
                });
            }
            if self.unique {
                return Err(IndexSpecError::IdIndexOption {
                    field: "unique".into(),
                });
            }
            if self.sparse {
                return Err(IndexSpecError::IdIndexOption {
                    field: "sparse".into(),
                });
            }
        }
        Ok(())
    }

    /// The index keys of one document (without the `_id` suffix), sorted and deduplicated;
    /// `None` when a sparse index skips the document.
    pub(crate) fn document_keys(
        &self,
        doc: &RawDocument,
    ) -> Result<Option<DocumentKeys>, KeyError> {
        if self.text.is_some() {
            return self.text_keys(doc);
        }
        let Some(per_field) = self.field_values(doc)? else {
            return Ok(None);
        };
        let multikey = per_field.iter().any(|f| !f.array_depths.is_empty());
        let count = per_field
            .iter()
            .try_fold(1usize, |acc, f| acc.checked_mul(f.values.len()))
            .filter(|&n| n <= MAX_KEYS_PER_DOCUMENT)
            .ok_or(KeyError::TooManyKeys {
                limit: MAX_KEYS_PER_DOCUMENT,
            })?;
        let mut keys = Vec::with_capacity(count);
        let mut prefix = Vec::with_capacity(32);
        self.product(&per_field, 0, &mut prefix, &mut keys);
        keys.sort_unstable();
        keys.dedup();
        // A geo field keys one geometry by several cells, as an array keys its elements.
        let multikey = multikey || keys.len() > 1;
        // Only a document with one key in a non-multikey index can be answered from its key,
        // so only such keys carry their types.
        let mut types = Vec::new();
        if !multikey && keys.len() == 1 {
            keys::types_of(
                per_field.iter().map(|f| (f.values[0], f.missing)),
                &mut types,
            );
        }
        Ok(Some(DocumentKeys {
            keys,
            multikey,
            types,
        }))
    }

    /// Each index key of one document with the values it holds, as `returnKey` shows them: a
    /// document of the key pattern's field names (a hashed field's hash as its value).
    pub(crate) fn key_entries(
        &self,
        doc: &RawDocument,
    ) -> Result<Vec<(Vec<u8>, Document)>, KeyError> {
        if self.text.is_some() {
            return self.text_key_entries(doc);
        }
        let per_field = self.field_values(doc)?.unwrap_or_default();
        let mut entries = vec![(Vec::new(), Document::new())];
        for ((path, direction), field) in self.keys.iter().zip(&per_field) {
            if entries.len().saturating_mul(field.values.len()) > MAX_KEYS_PER_DOCUMENT {
                return Err(KeyError::TooManyKeys {
                    limit: MAX_KEYS_PER_DOCUMENT,
                });
            }
            let mut next = Vec::with_capacity(entries.len() * field.values.len());
            for (key, values) in &entries {
                for value in &field.values {
                    let (mut key, mut values) = (key.clone(), values.clone());
                    let collation = self.collation.as_deref();
                    keys::encode_collated_into(&mut key, *value, *direction, collation);
                    let value = Bson::try_from(value.to_owned()).unwrap_or(Bson::Null);
                    values.insert(path.as_str(), value);
                    next.push((key, values));
                }
            }
            entries = next;
        }
        Ok(entries)
    }

    /// The values each key field takes in `doc`, a hashed field's hashed, after the checks
    /// every key of the document passes (no parallel arrays); `None` when a sparse or partial
    /// index skips the document.
    fn field_values<'d>(
        &self,
        doc: &'d RawDocument,
    ) -> Result<Option<Vec<KeyValues<'d>>>, KeyError> {
        let mut per_field: Vec<KeyValues<'d>> = Vec::with_capacity(self.keys.len());
        for (at, (path, _)) in self.keys.iter().enumerate() {
            per_field.push(match &self.geo {
                Some((positions, geo)) if positions.contains(&at) => geo_values(geo, doc, path)?,
                _ => key_values(doc, path).map_err(KeyError::Malformed)?,
            });
        }
        if self.sparse && per_field.iter().all(|f| f.missing) {
            return Ok(None);
        }
        // A geo index skips a document without geometry in any geo field, as MongoDB's do.
        if let Some((positions, _)) = &self.geo
            && positions.iter().all(|&at| per_field[at].missing)
        {
            return Ok(None);
        }
        if self
            .partial
            .as_ref()
            .is_some_and(|p| !p.filter.matches(doc))
        {
            return Ok(None);
        }
        self.check_parallel_arrays(&per_field)?;
        if let Some(hashed) = self.hashed {
            hash_field(
                &self.keys,
                &mut per_field,
                hashed,
                self.collation.as_deref(),
            )?;
        }
        Ok(Some(per_field))
    }

    fn product(
        &self,
        fields: &[KeyValues<'_>],
        at: usize,
        prefix: &mut Vec<u8>,
        out: &mut Vec<Vec<u8>>,
    ) {
        if at == fields.len() {
            out.push(prefix.clone());
            return;
        }
        let direction = self.keys[at].1;
        for value in &fields[at].values {
            let len = prefix.len();
            keys::encode_collated_into(prefix, *value, direction, self.collation.as_deref());
            self.product(fields, at + 1, prefix, out);
            prefix.truncate(len);
        }
    }

    /// A text index's keys of one document: one per term (see the module documentation); `None`
    /// for a document without terms, which a text index skips as a sparse one would.
    fn text_keys(&self, doc: &RawDocument) -> Result<Option<DocumentKeys>, KeyError> {
        let entries = self.text_key_entries(doc)?;
        if entries.is_empty() {
            return Ok(None);
        }
        let mut keys: Vec<Vec<u8>> = entries.into_iter().map(|(key, _)| key).collect();
        keys.sort_unstable();
        keys.dedup();
        Ok(Some(DocumentKeys {
            multikey: keys.len() > 1,
            keys,
            types: Vec::new(),
        }))
    }

    /// Each key of a text index for one document with the values it holds: the prefix and
    /// suffix fields' values, and the term as `_fts` with its score as `_ftsx`.
    fn text_key_entries(&self, doc: &RawDocument) -> Result<Vec<(Vec<u8>, Document)>, KeyError> {
        let (Some(text), Some(at)) = (&self.text, self.text_position()) else {
            return Ok(Vec::new());
        };
        if self
            .partial
            .as_ref()
            .is_some_and(|p| !p.filter.matches(doc))
        {
            return Ok(Vec::new());
        }
        let mut scores: Vec<(String, f64)> = text
            .term_scores(doc)
            .map_err(KeyError::Text)?
            .into_iter()
            .collect();
        if scores.len() > MAX_KEYS_PER_DOCUMENT {
            return Err(KeyError::TooManyKeys {
                limit: MAX_KEYS_PER_DOCUMENT,
            });
        }
        scores.sort_by(|a, b| a.0.cmp(&b.0));
        let single = |path: &Path| -> Result<RawBsonRef<'_>, KeyError> {
            let values = key_values(doc, path).map_err(KeyError::Malformed)?;
            if values.array_depths.is_empty() {
                Ok(values.values.first().copied().unwrap_or(RawBsonRef::Null))
            } else {
                Err(KeyError::Text(TextError::ArrayBesideText {
                    path: path.to_string(),
                }))
            }
        };
        let mut around = Vec::with_capacity(self.keys.len() - 2);
        for (path, direction) in self.keys[..at].iter().chain(&self.keys[at + 2..]) {
            around.push((path, *direction, single(path)?));
        }
        let (prefix, suffix) = around.split_at(at);
        let mut entries = Vec::with_capacity(scores.len());
        for (term, score) in scores {
            let mut key = Vec::new();
            let mut values = Document::new();
            for (path, direction, value) in prefix {
                keys::encode_into(&mut key, *value, *direction);
                values.insert(
                    path.as_str(),
                    Bson::try_from(value.to_owned()).unwrap_or(Bson::Null),
                );
            }
            let term_key = crate::text::term_key(&term);
            keys::encode_into(
                &mut key,
                RawBsonRef::String(&term_key),
                Direction::Ascending,
            );
            keys::encode_into(&mut key, RawBsonRef::Double(score), Direction::Ascending);
            values.insert(TEXT_KEY, term_key.as_ref());
            values.insert(TEXT_SCORE_KEY, score);
            for (path, direction, value) in suffix {
                keys::encode_into(&mut key, *value, *direction);
                values.insert(
                    path.as_str(),
                    Bson::try_from(value.to_owned()).unwrap_or(Bson::Null),
                );
            }
            entries.push((key, values));
        }
        Ok(entries)
    }

    /// Two fields whose paths went through arrays that the other did not are parallel arrays.
    fn check_parallel_arrays(&self, fields: &[KeyValues<'_>]) -> Result<(), KeyError> {
        let arrays = |i: usize| -> Vec<String> {
            let segments = self.keys[i].0.segments();
            fields[i]
                .array_depths
                .iter()
                .map(|&d| segments[..d].join("."))
                .collect()
        };
        for i in 0..fields.len() {
            for j in i + 1..fields.len() {
                let (a, b) = (arrays(i), arrays(j));
                let a_only = a.iter().find(|p| !b.contains(p));
                let b_only = b.iter().find(|p| !a.contains(p));
                if let (Some(first), Some(second)) = (a_only, b_only) {
                    return Err(KeyError::ParallelArrays {
                        first: first.clone(),
                        second: second.clone(),
                    });
                }
            }
        }
        Ok(())
    }
}

/// The default name of a geo index: `loc_2dsphere`, `loc_2d_type_1`.
fn geo_name(keys: &[(Path, Direction)], positions: &[usize], kind: &str) -> String {
    keys.iter()
        .enumerate()
        .map(|(i, (p, d))| {
            if positions.contains(&i) {
                format!("{}_{kind}", p.as_str())
            } else {
                format!("{}_{}", p.as_str(), d.as_i32())
            }
        })
        .collect::<Vec<_>>()
        .join("_")
}

/// The geo fields of a key pattern (positions, and whether each is `2dsphere`) checked as
/// MongoDB checks them, with the index document's geo options: any number of `2dsphere`
/// fields beside ordinary ones, or one `2d` field, first; never beside another special kind.
fn geo_fields(
    geo: &[(usize, bool)],
    hashed: bool,
    index: &Document,
) -> Result<Option<(Vec<usize>, GeoIndex)>, IndexSpecError> {
    let bad = |code: i32, reason: &str| IndexSpecError::BadGeo {
        code: Some(code),
        reason: reason.to_owned(),
    };
    let Some(&(_, sphere)) = geo.first() else {
        return Ok(None);
    };
    if hashed || geo.iter().any(|&(_, s)| s != sphere) {
        return Err(bad(
            16823,
            "Cannot use 2dsphere index with other special index types",
        ));
    }
    if !sphere && geo.len() > 1 {
        return Err(bad(16800, "can't have 2 geo fields"));
    }
    if !sphere && geo[0].0 != 0 {
        return Err(bad(16801, "2d has to be first in index"));
    }
    let kind = GeoIndex::from_options(sphere, index)
        .map_err(|reason| IndexSpecError::BadGeo { code: None, reason })?;
    Ok(Some((geo.iter().map(|&(p, _)| p).collect(), kind)))
}

fn default_name(keys: &[(Path, Direction)], hashed: Option<usize>) -> String {
    keys.iter()
        .enumerate()
        .map(|(i, (p, d))| {
            if hashed == Some(i) {
                format!("{}_hashed", p.as_str())
            } else {
                format!("{}_{}", p.as_str(), d.as_i32())
            }
        })
        .collect::<Vec<_>>()
        .join("_")
}

/// A geo field's keys as the values of a key field: its cell ids (see [`crate::geo`]),
/// "missing" when it holds no geometry. The arrays a geometry is written with are its own, not
/// the document's, so they count for no parallel-array check.
fn geo_values<'d>(
    geo: &GeoIndex,
    doc: &'d RawDocument,
    path: &Path,
) -> Result<KeyValues<'d>, KeyError> {
    let cells = geo
        .keys(doc, path.segments())
        .map_err(|error| KeyError::Geo {
            document: render(RawBsonRef::Document(doc)),
            error,
        })?;
    if cells.len() > MAX_KEYS_PER_DOCUMENT {
        return Err(KeyError::TooManyKeys {
            limit: MAX_KEYS_PER_DOCUMENT,
        });
    }
    Ok(KeyValues {
        missing: cells.is_empty(),
        values: if cells.is_empty() {
            vec![RawBsonRef::Null]
        } else {
            cells.into_iter().map(RawBsonRef::Int64).collect()
        },
        array_depths: Vec::new(),
    })
}

/// Replaces the hashed field's value by its hash (under the index's collation, if any). A
/// hashed index holds no arrays, on any of its fields, as in MongoDB: an array has no single
/// hash to stand for its elements.
fn hash_field(
    keys: &[(Path, Direction)],
    per_field: &mut [KeyValues<'_>],
    hashed: usize,
    collation: Option<&Collation>,
) -> Result<(), KeyError> {
    for (field, (path, _)) in per_field.iter().zip(keys) {
        if let Some(&depth) = field.array_depths.first() {
            return Err(KeyError::HashedArray {
                path: path.segments()[..depth].join("."),
            });
        }
    }
    let field = &mut per_field[hashed];
    let value = field.values.first().copied().unwrap_or(RawBsonRef::Null);
    field.values = vec![RawBsonRef::Int64(crate::hashed::hash_collated(
        value, collation,
    ))];
    Ok(())
}

fn bad_option(option: &str, reason: String) -> IndexSpecError {
    IndexSpecError::BadOption {
        option: option.to_owned(),
        reason,
    }
}

/// A field of the wrong type, as MongoDB's index validation names it (`TypeMismatch`).
fn wrong_type(option: &'static str, expected: &'static str, found: &Bson) -> IndexSpecError {
    IndexSpecError::WrongType {
        option,
        expected,
        found: crate::expr::type_name(found),
    }
}

/// A flag of an index document: absent is false, and MongoDB takes a number as a flag
/// (`unique: 1`) as it takes a boolean; anything else, `null` too, is a `TypeMismatch`.
fn option_flag(index: &Document, option: &'static str) -> Result<bool, IndexSpecError> {
    match index.get(option) {
        None => Ok(false),
        Some(Bson::Boolean(b)) => Ok(*b),
        Some(Bson::Int32(n)) => Ok(*n != 0),
        Some(Bson::Int64(n)) => Ok(*n != 0),
        Some(Bson::Double(n)) => Ok(*n != 0.0),
        Some(Bson::Decimal128(n)) => Ok(crate::expr::truthy(Some(&Bson::Decimal128(*n)))),
        Some(other) => Err(wrong_type(option, "a boolean or a number", other)),
    }
}

/// `expireAfterSeconds`: a number of seconds from 0 to 2^31 - 1, a double truncated.
fn expire_after_seconds(value: &Bson) -> Result<Duration, IndexSpecError> {
    let seconds = match value {
        Bson::Int32(n) => i64::from(*n),
        Bson::Int64(n) => *n,
        Bson::Double(d) if d.is_finite() => *d as i64,
        other => {
            return Err(bad_option(
                "expireAfterSeconds",
                format!(
                    "TTL index 'expireAfterSeconds' option must be numeric, but received a type of '{}'",
                    crate::expr::type_name(other)
                ),
            ));
        }
    };
    if !(0..=i64::from(i32::MAX)).contains(&seconds) {
        return Err(bad_option(
            "expireAfterSeconds",
            format!(
                "TTL index 'expireAfterSeconds' option must be within an acceptable range, try a lower number; found {seconds}"
            ),
        ));
    }
    Ok(Duration::from_secs(seconds as u64))
}

/// The fields of an index document this engine reads, or ignores as MongoDB does: the
/// bookkeeping ones MongoDB adds (`v`, `ns`, `background`) and the long deprecated `dropDups`.
const INDEX_OPTIONS: &[&str] = &[
    "key",
    "name",
    "unique",
    "sparse",
    "expireAfterSeconds",
    "partialFilterExpression",
    "v",
    "ns",
    "background",
    "dropDups",
    "collation",
    "weights",
    "default_language",
    "language_override",
    "textIndexVersion",
    "2dsphereIndexVersion",
    "bits",
    "min",
    "max",
];

/// The options only a geo index takes (read by [`GeoIndex::from_options`]).
const GEO_OPTIONS: &[&str] = &["2dsphereIndexVersion", "bits", "min", "max"];

/// The options only a text index takes.
const TEXT_OPTIONS: &[&str] = &[
    "weights",
    "default_language",
    "language_override",
    "textIndexVersion",
];

/// The options of index documents MongoDB builds and this engine does not.
const UNSUPPORTED_OPTIONS: &[&str] = &[
    "hidden",
    "wildcardProjection",
    "finestIndexedLevel",
    "coarsestIndexedLevel",
    "maxCellsInCovering",
    "clustered",
    "storageEngine",
    "prepareUnique",
];

/// Refuses a field of an index document this engine does not build, or MongoDB does not know.
fn check_option_name(option: &str) -> Result<(), IndexSpecError> {
    if INDEX_OPTIONS.contains(&option) {
        Ok(())
    } else if UNSUPPORTED_OPTIONS.contains(&option) {
        Err(IndexSpecError::UnsupportedOption {
            option: option.to_owned(),
        })
    } else {
        Err(IndexSpecError::UnknownOption {
            option: option.to_owned(),
        })
    }
}

/// The key a text index's terms take in its stored key pattern, and the key of their scores.
const TEXT_KEY: &str = "_fts";
const TEXT_SCORE_KEY: &str = "_ftsx";

/// Whether a key pattern asks for a text index: a field with the value `"text"`, or the stored
/// form's `_fts`.
fn is_text_pattern(keys: &Document) -> bool {
    keys.iter()
        .any(|(path, value)| path == TEXT_KEY || matches!(value, Bson::String(k) if k == "text"))
}

/// A text index from its key pattern, `{a: 1, title: "text", body: "text", z: 1}` or the stored
/// `{a: 1, _fts: "text", _ftsx: 1, z: 1}`, and the index document's text options. The text
/// fields are contiguous; the fields around them are ascending or descending.
fn text_index(pattern: &Document, index: &Document) -> Result<IndexSpec, IndexSpecError> {
    let refuse = |reason: String| IndexSpecError::BadText { reason };
    let mut keys: Vec<(&str, Direction)> = Vec::new();
    let mut text_fields: Vec<&str> = Vec::new();
    // Where the text fields are: not yet seen, being read, or behind.
    let (mut seen, mut closed) = (false, false);
    let mut entries = pattern.iter().peekable();
    while let Some((path, value)) = entries.next() {
        let is_text = matches!(value, Bson::String(k) if k == "text");
        if path == TEXT_KEY {
            if !is_text || seen {
                return Err(refuse(format!("`{TEXT_KEY}` is the text index's own key")));
            }
            if !matches!(entries.next(), Some((next, Bson::Int32(1) | Bson::Int64(1) | Bson::Double(1.0))) if next == TEXT_SCORE_KEY)
            {
                return Err(refuse(format!(
                    "`{TEXT_KEY}: \"text\"` must be followed by `{TEXT_SCORE_KEY}: 1`"
                )));
            }
            (seen, closed) = (true, true);
            keys.push((TEXT_KEY, Direction::Ascending));
            keys.push((TEXT_SCORE_KEY, Direction::Ascending));
            continue;
        }
        if path == TEXT_SCORE_KEY {
            return Err(refuse(format!(
                "`{TEXT_SCORE_KEY}` is the text index's own key"
            )));
        }
        if is_text {
            if closed {
                return Err(refuse(
                    "the text fields of a text index must be contiguous".into(),
                ));
            }
            if !seen {
                keys.push((TEXT_KEY, Direction::Ascending));
                keys.push((TEXT_SCORE_KEY, Direction::Ascending));
            }
            seen = true;
            text_fields.push(path);
            continue;
        }
        closed |= seen;
        let direction = match value {
            Bson::Int32(1) | Bson::Int64(1) => Direction::Ascending,
            Bson::Double(d) if (*d - 1.0).abs() < f64::EPSILON => Direction::Ascending,
            Bson::Int32(-1) | Bson::Int64(-1) => Direction::Descending,
            Bson::Double(d) if (*d + 1.0).abs() < f64::EPSILON => Direction::Descending,
            other => {
                return Err(refuse(format!(
                    "the fields beside a text index's text fields must be 1 or -1, `{path}` is {other}"
                )));
            }
        };
        keys.push((path, direction));
    }
    let text = TextSpec::parse(&text_fields, index)?;
    let mut spec = IndexSpec::new(keys)?;
    spec.name = pattern
        .iter()
        .map(|(path, value)| match value {
            Bson::String(kind) => format!("{path}_{kind}"),
            other => format!("{path}_{}", crate::expr::as_i64(other).unwrap_or(1)),
        })
        .collect::<Vec<_>>()
        .join("_");
    spec.text = Some(Arc::new(text));
    Ok(spec)
}

/// A text option of an index document: only a text index takes one, and `textIndexVersion`
/// must be the version this engine builds.
fn check_text_option(spec: &IndexSpec, option: &str, value: &Bson) -> Result<(), IndexSpecError> {
    if spec.text.is_none() {
        return Err(bad_option(
            option,
            "only a text index takes this option".into(),
        ));
    }
    if option == "textIndexVersion" {
        let version = crate::expr::as_i64(value);
        if version == Some(2) {
            return Err(IndexSpecError::BadText {
                reason: "textIndexVersion 2 is not built by this engine, which builds version 3"
                    .into(),
            });
        }
        if version != Some(i64::from(crate::text::TEXT_INDEX_VERSION)) {
            return Err(IndexSpecError::BadText {
                reason: format!("bad textIndexVersion: {value}"),
            });
        }
    }
    Ok(())
}

/// Why a key document's value is refused: MongoDB's rules for key pattern values.
fn bad_key_value(path: &str, value: &Bson) -> IndexSpecError {
    let reason = match value {
        Bson::String(kind)
            if matches!(
                kind.as_str(),
                "2d" | "2dsphere" | "geoHaystack" | "wildcard" | "columnstore"
            ) =>
        {
            return IndexSpecError::UnsupportedKind {
                path: path.to_owned(),
                kind: kind.clone(),
            };
        }
        Bson::String(kind) if kind.is_empty() => {
            "values in the index key pattern cannot be empty strings".to_owned()
        }
        Bson::String(kind) => format!("unknown index plugin `{kind}`"),
        Bson::Double(d) if d.is_nan() => "values in the index key pattern cannot be NaN".to_owned(),
        Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) => {
            "values in the index key pattern cannot be 0".to_owned()
        }
        other => format!(
            "values in the index key pattern cannot be of type {}; only numbers > 0, numbers < 0 and strings are allowed",
            crate::expr::type_alias(Some(other))
        ),
    };
    IndexSpecError::BadKeyValue {
        path: path.to_owned(),
        reason,
    }
}

/// The keys one document gives one index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DocumentKeys {
    /// Encoded keys, sorted, without duplicates.
    pub(crate) keys: Vec<Vec<u8>>,
    /// Whether any key field went through an array.
    pub(crate) multikey: bool,
    /// The key types of the document's key when it has one and is not multikey (see
    /// [`keys::types_of`]); empty otherwise.
    pub(crate) types: Vec<u8>,
}

/// Why a document cannot be indexed.
#[derive(Debug, Clone)]
pub(crate) enum KeyError {
    ParallelArrays {
        first: String,
        second: String,
    },
    /// A hashed index met an array at `path`.
    HashedArray {
        path: String,
    },
    /// A text index cannot read the document's strings or fields.
    Text(TextError),
    /// A geo index cannot key the document's geo field (the document as MongoDB shows it).
    Geo {
        document: String,
        error: crate::geo::GeoKeyError,
    },
    TooManyKeys {
        limit: usize,
    },
    Malformed(DamagedElement),
}

/// The stored table entry for one key of one document.
///
/// Layout: a unique index maps the key to the `_id` key followed by the key types (one document
/// per key); any other index maps the key followed by the `_id` key to the key types. The `_id`
/// key is prefix-free, so the types start where it ends.
pub(crate) fn entry(unique: bool, key: &[u8], id_key: &[u8], types: &[u8]) -> (Vec<u8>, Vec<u8>) {
    if unique {
        let mut v = Vec::with_capacity(id_key.len() + types.len());
        v.extend_from_slice(id_key);
        v.extend_from_slice(types);
        (key.to_vec(), v)
    } else {
        let mut k = Vec::with_capacity(key.len() + id_key.len());
        k.extend_from_slice(key);
        k.extend_from_slice(id_key);
        (k, types.to_vec())
    }
}

/// The key types of an entry, from its value.
pub(crate) fn entry_types(unique: bool, value: &[u8]) -> Option<&[u8]> {
    if unique {
        value.get(unique_holder(value)?.len()..)
    } else {
        Some(value)
    }
}

/// The `_id` key at the start of a unique index entry's value.
pub(crate) fn unique_holder(value: &[u8]) -> Option<&[u8]> {
    value.get(..keys::encoded_len(value, keys::Direction::Ascending)?)
}

/// A readable rendering of the key values of a document for an index, for error messages:
/// `{ a: 1, b: "x" }`.
/// The duplicate key of a unique index as MongoDB reports it: the message's `{ a: 1, b: "x" }`
/// and the `keyValue` document (the values of `doc` whose encoding is `key`, or the
/// document's field values where no combination encodes to it).
pub(crate) fn describe_key(spec: &IndexSpec, doc: &RawDocument, key: &[u8]) -> DuplicateOf {
    let fields: Vec<KeyValues<'_>> = spec
        .keys
        .iter()
        .filter_map(|(p, _)| key_values(doc, p).ok())
        .collect();
    let mut chosen: Vec<RawBsonRef<'_>> = Vec::new();
    if !find_combination(spec, &fields, 0, &mut Vec::new(), key, &mut chosen) {
        chosen = fields
            .iter()
            .map(|f| f.values.first().copied().unwrap_or(RawBsonRef::Null))
            .collect();
    }
    let mut value = Document::new();
    let mut parts = Vec::new();
    for ((path, _), v) in spec.keys.iter().zip(&chosen) {
        parts.push(format!("{}: {}", path, render(*v)));
        value.insert(path.to_string(), Bson::try_from(*v).unwrap_or(Bson::Null));
    }
    DuplicateOf {
        text: format!("{{ {} }}", parts.join(", ")),
        pattern: spec.keys_document(),
        value,
    }
}

/// A duplicate key, described: see [`describe_key`].
pub(crate) struct DuplicateOf {
    pub text: String,
    pub pattern: Document,
    pub value: Document,
}

fn find_combination<'a>(
    spec: &IndexSpec,
    fields: &[KeyValues<'a>],
    at: usize,
    prefix: &mut Vec<u8>,
    key: &[u8],
    chosen: &mut Vec<RawBsonRef<'a>>,
) -> bool {
    if at == fields.len() {
        return prefix == key;
    }
    for value in &fields[at].values {
        let len = prefix.len();
        keys::encode_into(prefix, *value, spec.keys[at].1);
        chosen.push(*value);
        if key.starts_with(prefix) && find_combination(spec, fields, at + 1, prefix, key, chosen) {
            return true;
        }
        chosen.pop();
        prefix.truncate(len);
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::rawdoc;

    fn spec(fields: &[(&str, i32)]) -> IndexSpec {
        IndexSpec::new(fields.iter().map(|(p, d)| {
            (
                *p,
                if *d < 0 {
                    Direction::Descending
                } else {
                    Direction::Ascending
                },
            )
        }))
        .unwrap()
    }

    #[test]
    fn default_names_follow_mongodb() {
        assert_eq!(spec(&[("a", 1), ("b.c", -1)]).name(), "a_1_b.c_-1");
    }

    #[test]
    fn multikey_fans_out_and_dedups() {
        let keys = spec(&[("tags", 1)])
            .document_keys(&rawdoc! { "tags": ["x", "y", "x"] })
            .unwrap()
            .unwrap();
        assert_eq!(keys.keys.len(), 2);
        assert!(keys.multikey);
    }

    #[test]
    fn parallel_arrays_are_refused_but_shared_arrays_are_not() {
        let s = spec(&[("a", 1), ("b", 1)]);
        assert!(matches!(
            s.document_keys(&rawdoc! { "a": [1, 2], "b": [3] }),
            Err(KeyError::ParallelArrays { .. })
        ));
        let shared = spec(&[("a.b", 1), ("a.c", 1)]);
        let keys = shared
            .document_keys(&rawdoc! { "a": [{ "b": 1, "c": 2 }, { "b": 3, "c": 4 }] })
            .unwrap()
            .unwrap();
        assert_eq!(keys.keys.len(), 4);
    }

    #[test]
    fn sparse_skips_documents_without_any_field() {
        let s = spec(&[("a", 1), ("b", 1)]).sparse();
        assert_eq!(s.document_keys(&rawdoc! { "c": 1 }).unwrap(), None);
        assert!(s.document_keys(&rawdoc! { "b": 1 }).unwrap().is_some());
    }

    #[test]
    fn ttl_must_be_single_field() {
        let s = spec(&[("a", 1), ("b", 1)]).expire_after(Duration::from_secs(1));
        assert!(matches!(
            s.validate(),
            Err(IndexSpecError::TtlCompound { .. })
        ));
    }

    #[test]
    fn describe_key_names_the_values() {
        let s = spec(&[("a", 1), ("b", -1)]);
        let doc = rawdoc! { "a": [1, 2], "b": "x" };
        let keys = s.document_keys(&doc).unwrap().unwrap();
        let described = describe_key(&s, &doc, &keys.keys[1]);
        assert_eq!(described.text, "{ a: 2, b: \"x\" }");
        assert_eq!(described.value, bson::doc! { "a": 2, "b": "x" });
        assert_eq!(described.pattern, bson::doc! { "a": 1, "b": -1 });
    }
}
