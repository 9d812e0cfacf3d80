//! Checks the model before anything is generated; every error points at the offending token.
//!
//! Index and shard key paths name fields (a close name is suggested); paths into subdocuments
//! go through `embedded` fields (the fields inside are checked by the compiler, through the
//! generated handle accesses); TTL indexes have one top-level date field; no compound index
//! spans two array fields; no two indexes have the same keys; a sharded model's unique indexes
//! start with the shard key, and a hashed shard key is not unique; a model has at most one
//! text index, whose options need its fields, and a `2d` key comes first and alone (the types
//! of text and geo fields are checked by the compiler, through bounds on the generated handle
//! accesses); a model has one id field, and at most one of each kept field (`created_at`,
//! `updated_at`, `version`), none the id.
//!
//! Every check has a trybuild case named after the mistake in the odm crate's `tests/ui/derive`.

use proc_macro2::Span;
use syn::spanned::Spanned;

use crate::ast::{Container, IndexDecl, Kept, KeyDecl, KeyKind, Kind};
use crate::case::distance;
use crate::ctxt::Ctxt;
use crate::types::{element, is_array, is_date};

pub fn check(cx: &Ctxt, c: &Container<'_>) {
    if c.kind == Kind::Document {
        check_id(cx, c);
        check_kept(cx, c);
    }
    for index in c.all_indexes() {
        for key in index
            .keys
            .iter()
            .chain(index.partial.iter().map(|(k, _)| k))
        {
            check_path(cx, c, key);
        }
        for (key, _) in &index.text {
            check_path(cx, c, key);
        }
        check_ttl(cx, c, index);
        check_parallel_arrays(cx, c, index);
        check_search(cx, c, index);
    }
    check_one_text_index(cx, c);
    if let Some(shard) = &c.shard_key {
        for key in &shard.keys {
            check_path(cx, c, key);
        }
        if shard.keys.is_empty() {
            cx.syn_error(syn::Error::new(
                shard.span,
                "a shard key needs at least one field",
            ));
        }
        if shard.hashed && shard.keys.len() > 1 {
            cx.syn_error(syn::Error::new(
                shard.span,
                "a hashed shard key has one field",
            ));
        }
        if let (true, Some(unique)) = (shard.hashed, shard.unique) {
            cx.syn_error(syn::Error::new(
                unique,
                "a hashed shard key cannot be unique: MongoDB cannot enforce uniqueness on hashed values",
            ));
        }
    }
    check_duplicates(cx, c);
    check_unique_under_shard_key(cx, c);
    check_version(cx, c);
    check_rules(cx, c);
}

/// Field rules (and `check` functions) belong to the type's schema, so the type declares one;
/// a skipped field has none.
fn check_rules(cx: &Ctxt, c: &Container<'_>) {
    for field in &c.fields {
        let span = match (field.rules.first(), &field.check) {
            (Some(rule), _) => rule.span,
            (None, Some(check)) => check.span(),
            (None, None) => continue,
        };
        if field.skipped {
            cx.syn_error(syn::Error::new(
                span,
                "a field skipped or flattened by serde is not stored, so it has no schema rules",
            ));
        } else if c.schema.is_none() {
            cx.syn_error(syn::Error::new(
                span,
                "schema rules need #[odm(schema)] on the type, which makes its schema",
            ));
        }
    }
}

/// Migrations need a version to migrate to, and one way to migrate.
fn check_version(cx: &Ctxt, c: &Container<'_>) {
    match (&c.version, &c.from, &c.migrate) {
        (None, Some(from), _) => cx.error_spanned_by(from, "`from` needs `version = N` on this model"),
        (None, _, Some(migrate)) => {
            cx.error_spanned_by(migrate, "`migrate` needs `version = N` on this model");
        }
        (Some((0, span)), _, _) => {
            cx.syn_error(syn::Error::new(*span, "versions start at 1 (0 is an unversioned model)"));
        }
        (_, Some(_), Some(migrate)) => cx.error_spanned_by(
            migrate,
            "give `from` (a previous model converted with From) or `migrate` (a function), not both",
        ),
        _ => {}
    }
}

fn check_id(cx: &Ctxt, c: &Container<'_>) {
    let ids: Vec<_> = c.fields.iter().filter(|f| f.id.is_some()).collect();
    match ids.as_slice() {
        [] => cx.error_spanned_by(
            c.ident,
            format!(
                "`{}` has no id field: mark the field that identifies a document #[odm(id)] (it is stored as `_id`)",
                c.ident
            ),
        ),
        [id] if id.skipped => cx.error_spanned_by(
            id.ident,
            "the id field cannot be skipped or flattened by serde",
        ),
        [_] => {}
        [_, second, ..] => cx.syn_error(syn::Error::new(
            second.id.unwrap_or_else(Span::call_site),
            "a model has one id field; this is the second",
        )),
    }
}

/// Each kept field (`created_at`, `updated_at`, `version`) is declared once, on a stored field
/// other than the id and not `embedded`. Its type is checked by the compiler, through the
/// traits the generated code asks of it.
fn check_kept(cx: &Ctxt, c: &Container<'_>) {
    for kept in [Kept::CreatedAt, Kept::UpdatedAt, Kept::Revision] {
        let mut declared = c.fields.iter().filter_map(|f| {
            f.kept
                .filter(|(k, _)| *k == kept)
                .map(|(_, span)| (f, span))
        });
        if let Some((field, span)) = declared.next() {
            let name = kept.attribute();
            let refuse = |why: String| cx.syn_error(syn::Error::new(span, why));
            if field.id.is_some() {
                refuse(format!(
                    "the id field cannot be `{name}`: a document's id never changes"
                ));
            } else if field.skipped {
                refuse(format!(
                    "the `{name}` field cannot be skipped or flattened by serde: it must be stored"
                ));
            } else if field.embedded {
                refuse(format!(
                    "the `{name}` field holds a value the ODM writes, not an embedded type"
                ));
            }
        }
        for (_, span) in declared {
            cx.syn_error(syn::Error::new(
                span,
                format!(
                    "a model has one `{}` field; this is the second",
                    kept.attribute()
                ),
            ));
        }
    }
}

/// The first segment names a stored field; later segments need an embedded field.
fn check_path(cx: &Ctxt, c: &Container<'_>, key: &KeyDecl) {
    let first = &key.path[0];
    match c.field(first) {
        Some(field) if field.skipped => cx.syn_error(syn::Error::new(
            key.span,
            format!("`{first}` is skipped or flattened by serde, so it is not stored and cannot be indexed"),
        )),
        Some(field) if key.path.len() > 1 && field.embedded && c.type_parameter(element(field.ty)).is_some() => {
            let parameter = c.type_parameter(element(field.ty)).map(ToString::to_string).unwrap_or_default();
            cx.syn_error(syn::Error::new(
                key.span,
                format!(
                    "`{}` goes into `{first}`, whose type is the parameter `{parameter}`: the fields of `{parameter}` are not known where `{}` is declared, so they cannot be indexed here; index a field of the model itself",
                    key.dotted(),
                    c.ident
                ),
            ));
        }
        Some(field) if key.path.len() > 1 && !field.embedded => cx.syn_error(syn::Error::new(
            key.span,
            format!(
                "`{}` goes into `{first}`, which is not marked #[odm(embedded)]; mark it (its type must derive Embedded) to index paths inside it",
                key.dotted()
            ),
        )),
        Some(_) => {}
        None => {
            let hint = closest(c, first)
                .map(|name| format!("; did you mean `{name}`?"))
                .unwrap_or_default();
            cx.syn_error(syn::Error::new(
                key.span,
                format!("`{}` has no field `{first}`{hint}", c.ident),
            ));
        }
    }
}

/// A field name within a small edit distance of `name`.
fn closest(c: &Container<'_>, name: &str) -> Option<String> {
    c.fields
        .iter()
        .filter(|f| !f.skipped)
        .map(|f| (distance(name, &f.ident.to_string()), f.ident.to_string()))
        .filter(|(d, candidate)| *d <= 2.max(candidate.len() / 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, candidate)| candidate)
}

fn check_ttl(cx: &Ctxt, c: &Container<'_>, index: &IndexDecl) {
    let Some((_, lit)) = &index.ttl else {
        return;
    };
    if index.is_search() {
        return; // refused by `check_search_options`
    }
    match index.keys.as_slice() {
        [key] if key.path.len() == 1 => {
            if let Some(field) = c.field(&key.path[0])
                && !is_date(field.ty)
            {
                let ty = field.ty;
                cx.syn_error(syn::Error::new(
                    lit.span(),
                    format!(
                        "a TTL index needs a date field (`bson::DateTime`); `{}` is `{}`",
                        key.path[0],
                        quote::quote!(#ty)
                    ),
                ));
            }
        }
        [_] => cx.syn_error(syn::Error::new(
            lit.span(),
            "a TTL index must be on a top-level date field",
        )),
        _ => cx.syn_error(syn::Error::new(
            lit.span(),
            "a TTL index must have exactly one key field, not a compound key",
        )),
    }
}

/// A text index's prefix keys are ordinary; a `2d` key comes first and alone (MongoDB's 16801
/// and 16800); the text options belong to a text index; a language override is a field name.
fn check_search(cx: &Ctxt, c: &Container<'_>, index: &IndexDecl) {
    check_search_options(cx, index);
    check_repeated_paths(cx, index);
    // MongoDB refuses a compound text index whose other keys hold arrays, on every insert.
    if !index.text.is_empty() {
        for key in &index.keys {
            if c.field(&key.path[0]).is_some_and(|f| is_array(f.ty)) {
                cx.syn_error(syn::Error::new(
                    key.span,
                    "a text index's keys before its text fields cannot hold arrays: MongoDB refuses such documents",
                ));
            }
        }
    }
    if !index.text.is_empty()
        && let Some(key) = index.keys.iter().find(|k| k.kind.is_geo())
    {
        cx.syn_error(syn::Error::new(
            key.span,
            "a text index's keys before its text fields are 1 or -1, not geo keys",
        ));
    }
    let flat: Vec<usize> = (0..index.keys.len())
        .filter(|&i| index.keys[i].kind == KeyKind::Flat)
        .collect();
    if let Some(&position) = flat.iter().find(|&&i| i > 0) {
        cx.syn_error(syn::Error::new(
            index.keys[position].span,
            "a `2d` key must be the first key of its index, and the only geo key",
        ));
    } else if flat.len() == 1 && index.keys.iter().filter(|k| k.kind.is_geo()).count() > 1 {
        cx.syn_error(syn::Error::new(
            index.keys[0].span,
            "a `2d` index has one geo key; index the others in a `2dsphere` index",
        ));
    }
    if index.text.is_empty() {
        let option = index
            .language
            .as_ref()
            .map(Spanned::span)
            .or(index.language_override.as_ref().map(Spanned::span));
        if let Some(span) = option {
            cx.syn_error(syn::Error::new(
                span,
                "`default_language` and `language_override` are options of a text index: declare its fields in `text(...)`",
            ));
        }
    }
    if let Some(field) = &index.language_override {
        let name = field.value();
        if name.is_empty() || name.starts_with('$') || name.contains('.') {
            cx.syn_error(syn::Error::new(
                field.span(),
                "a language override is a top-level field name: not empty, no `$` first, no `.`",
            ));
        }
    }
}

/// A text or geo index takes no `unique` (over terms or cells it would not mean uniqueness of
/// values), no `sparse` (MongoDB ignores it: these indexes skip documents without the field
/// anyway) and no `ttl` (MongoDB's TTL indexes have one ordinary key).
fn check_search_options(cx: &Ctxt, index: &IndexDecl) {
    if !index.is_search() {
        return;
    }
    let refused = [
        (index.unique, "unique"),
        (index.sparse, "sparse"),
        (index.ttl.is_some(), "ttl"),
    ];
    for (_, option) in refused.iter().filter(|(set, _)| *set) {
        cx.syn_error(syn::Error::new(
            index.span,
            format!("a text or geo index takes no `{option}`"),
        ));
    }
}

/// A path appears once among an index's keys and text fields: a second mention would replace
/// the first in MongoDB's key document.
fn check_repeated_paths(cx: &Ctxt, index: &IndexDecl) {
    let all: Vec<&KeyDecl> = index
        .keys
        .iter()
        .chain(index.text.iter().map(|(k, _)| k))
        .collect();
    for (i, key) in all.iter().enumerate() {
        if all[..i].iter().any(|earlier| earlier.path == key.path) {
            cx.syn_error(syn::Error::new(
                key.span,
                format!("`{}` is already a key of this index", key.dotted()),
            ));
        }
    }
}

/// MongoDB keeps one text index per collection.
fn check_one_text_index(cx: &Ctxt, c: &Container<'_>) {
    let mut text = c.all_indexes().filter(|i| !i.text.is_empty()).skip(1);
    if let Some(second) = text.next() {
        cx.syn_error(syn::Error::new(
            second.span,
            "a collection has at most one text index: put every text field in one `text(...)`",
        ));
    }
}

fn check_parallel_arrays(cx: &Ctxt, c: &Container<'_>, index: &IndexDecl) {
    let mut arrays: Vec<&str> = Vec::new();
    // A geometry's own arrays (a pair, a polygon's rings) are one value, not a multikey.
    for key in index.keys.iter().filter(|k| !k.kind.is_geo()) {
        if let Some(field) = c.field(&key.path[0])
            && is_array(field.ty)
            && !arrays.contains(&key.path[0].as_str())
        {
            arrays.push(&key.path[0]);
        }
    }
    if let [first, second, ..] = arrays.as_slice() {
        cx.syn_error(syn::Error::new(
            index.span,
            format!(
                "a compound index cannot hold two array fields (`{first}` and `{second}`): MongoDB refuses such \"parallel arrays\""
            ),
        ));
    }
}

fn key_signature(index: &IndexDecl) -> Vec<(String, KeyKind)> {
    index.keys.iter().map(|k| (k.dotted(), k.kind)).collect()
}

fn check_duplicates(cx: &Ctxt, c: &Container<'_>) {
    let all: Vec<&IndexDecl> = c.all_indexes().collect();
    for (i, index) in all.iter().enumerate() {
        if index.text.is_empty()
            && all[..i].iter().any(|earlier| {
                earlier.text.is_empty() && key_signature(earlier) == key_signature(index)
            })
        {
            cx.syn_error(syn::Error::new(
                index.span,
                "another index has the same keys; declare each key pattern once",
            ));
        }
    }
}

fn check_unique_under_shard_key(cx: &Ctxt, c: &Container<'_>) {
    let Some(shard) = &c.shard_key else {
        return;
    };
    let prefix: Vec<String> = shard.keys.iter().map(KeyDecl::dotted).collect();
    for index in c.all_indexes().filter(|i| i.unique) {
        let keys: Vec<String> = index.keys.iter().map(KeyDecl::dotted).collect();
        if !keys.starts_with(&prefix) {
            cx.syn_error(syn::Error::new(
                index.span,
                format!(
                    "on a collection sharded by ({}), a unique index must start with the shard key; MongoDB cannot enforce this one across shards",
                    prefix.join(", ")
                ),
            ));
        }
    }
}
