//! Parsing `#[odm(...)]` and the `#[serde(...)]` renames into the model.
//!
//! Container: `collection = "..."`, `crate = "..."`, `index(keys(a = 1, "b.c" = -1), unique,
//! sparse, name = "...", ttl = "30d", partial(status = "active"))` (a key may be `"2dsphere"`
//! or `"2d"`), a text index `index(keys(prefix = 1), text(title = 10, body),
//! default_language = Spanish, language_override = "lang")`, `shard_key(a, b)` or
//! `shard_key(hashed(a))`, `version = N` with `from = Previous` or `migrate = function`,
//! `hooks`.
//! Field: `id`, `embedded`, `index` or `index(unique, sparse, desc, geo, flat, name = "...",
//! ttl = "365d")`, `created_at`, `updated_at`, `version`. Anything else is an error pointing at it. From serde: `rename`,
//! `rename_all`, and `skip`, `skip_serializing` and `flatten`, whose fields get no handle.

use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, LitStr, Token};

use crate::ast::{
    Container, FieldModel, IndexDecl, Kept, KeyDecl, KeyKind, Kind, Rule, RuleKind, SchemaDecl,
    ShardDecl,
};
use crate::case::RenameRule;
use crate::ctxt::Ctxt;
use crate::symbol::{
    ACTION, CHECK, COLLECTION, CRATE, CREATED_AT, DEFAULT_LANGUAGE, DESC, EMBEDDED, FLAT, FLATTEN,
    FROM, GEO, HASHED, HOOKS, ID, INDEX, KEYS, LANGUAGE_OVERRIDE, LEVEL, MIGRATE, NAME, ODM,
    PARTIAL, RENAME, RENAME_ALL, SCHEMA, SERDE, SHARD_KEY, SKIP, SKIP_SERIALIZING, SPARSE, TEXT,
    TTL, UNIQUE, UPDATED_AT, VERSION,
};

/// The model of `input`, or `None` when it is not a struct with named fields.
pub fn container<'a>(cx: &Ctxt, input: &'a DeriveInput, kind: Kind) -> Option<Container<'a>> {
    let Data::Struct(data) = &input.data else {
        cx.error_spanned_by(&input.ident, "odm models must be structs with named fields");
        return None;
    };
    let Fields::Named(named) = &data.fields else {
        cx.error_spanned_by(&input.ident, "odm models must be structs with named fields");
        return None;
    };
    check_generics(cx, &input.generics);
    let mut container = Container {
        ident: &input.ident,
        vis: &input.vis,
        generics: &input.generics,
        kind,
        collection: None,
        crate_path: None,
        indexes: Vec::new(),
        shard_key: None,
        version: None,
        from: None,
        migrate: None,
        hooks: None,
        schema: None,
        fields: Vec::new(),
    };
    let mut rename_all = RenameRule::None;
    for attr in &input.attrs {
        if attr.path().is_ident(ODM) {
            let parsed = attr.parse_nested_meta(|meta| container_item(cx, &mut container, &meta));
            if let Err(e) = parsed {
                cx.syn_error(e);
            }
        } else if attr.path().is_ident(SERDE) {
            serde_container(cx, attr, &mut rename_all);
        }
    }
    for field in &named.named {
        if let Some(model) = field_model(cx, field, rename_all, kind) {
            container.fields.push(model);
        }
    }
    Some(container)
}

/// A model or embedded type may have type and const parameters; it owns its data (decoded
/// from stored bytes, `DeserializeOwned`), so it has no lifetime parameters.
fn check_generics(cx: &Ctxt, generics: &syn::Generics) {
    for lifetime in generics.lifetimes() {
        cx.error_spanned_by(
            lifetime,
            "a model owns its data (it is decoded from stored bytes), so it cannot borrow: remove the lifetime parameter",
        );
    }
}

fn container_item(cx: &Ctxt, c: &mut Container<'_>, meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    let embedded_only = |what: &str| {
        cx.error_spanned_by(
            &meta.path,
            format!("`{what}` belongs on a #[derive(Document)] model, not on an embedded type"),
        );
    };
    if meta.path.is_ident(CRATE) {
        let path: LitStr = meta.value()?.parse()?;
        c.crate_path = Some(path.parse()?);
    } else if meta.path.is_ident(COLLECTION) {
        let name: LitStr = meta.value()?.parse()?;
        if c.kind == Kind::Embedded {
            embedded_only(COLLECTION);
        }
        c.collection = Some((name.value(), name.span()));
    } else if meta.path.is_ident(INDEX) {
        if c.kind == Kind::Embedded {
            embedded_only(INDEX);
        }
        let decl = index_decl(meta, None)?;
        if decl.keys.is_empty() && decl.text.is_empty() {
            cx.error_spanned_by(
                &meta.path,
                "a struct-level index needs `keys(...)` or `text(...)`",
            );
        }
        c.indexes.push(decl);
    } else if meta.path.is_ident(SHARD_KEY) {
        if c.kind == Kind::Embedded {
            embedded_only(SHARD_KEY);
        }
        c.shard_key = Some(shard_decl(meta)?);
    } else if meta.path.is_ident(VERSION) {
        let n: syn::LitInt = meta.value()?.parse()?;
        c.version = Some((n.base10_parse()?, n.span()));
    } else if meta.path.is_ident(FROM) {
        c.from = Some(meta.value()?.parse()?);
    } else if meta.path.is_ident(MIGRATE) {
        c.migrate = Some(meta.value()?.parse()?);
    } else if meta.path.is_ident(SCHEMA) {
        c.schema = Some(schema_decl(meta)?);
    } else if meta.path.is_ident(HOOKS) {
        if c.kind == Kind::Embedded {
            embedded_only(HOOKS);
        }
        c.hooks = Some(meta.path.span());
    } else {
        return Err(meta.error(format!(
            "unknown odm attribute `{}`; expected `collection`, `crate`, `index`, `shard_key`, `version`, `from`, `migrate`, `hooks` or `schema`",
            path_text(&meta.path)
        )));
    }
    Ok(())
}

fn path_text(path: &syn::Path) -> String {
    path.segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect::<Vec<_>>()
        .join("::")
}

/// `schema` or `schema(level = "strict" | "moderate" | "off", action = "error" | "warn")`.
fn schema_decl(meta: &ParseNestedMeta<'_>) -> syn::Result<SchemaDecl> {
    let mut decl = SchemaDecl {
        level: "strict".to_owned(),
        action: "error".to_owned(),
    };
    if meta.input.is_empty() || meta.input.peek(Token![,]) {
        return Ok(decl);
    }
    meta.parse_nested_meta(|item| {
        let (slot, option, allowed): (&mut String, &str, &[&str]) = if item.path.is_ident(LEVEL) {
            (&mut decl.level, LEVEL, &["strict", "moderate", "off"])
        } else if item.path.is_ident(ACTION) {
            (&mut decl.action, ACTION, &["error", "warn"])
        } else {
            return Err(item.error(format!(
                "unknown schema option `{}`; expected `level` or `action`",
                path_text(&item.path)
            )));
        };
        let lit: LitStr = item.value()?.parse()?;
        if !allowed.contains(&lit.value().as_str()) {
            return Err(syn::Error::new(
                lit.span(),
                format!(
                    "MongoDB's validation {option} is one of `{}`",
                    allowed.join("`, `")
                ),
            ));
        }
        *slot = lit.value();
        Ok(())
    })?;
    Ok(decl)
}

/// A field's `schema(keyword = value, ..., check = f)` rules.
fn field_rules(
    meta: &ParseNestedMeta<'_>,
    rules: &mut Vec<Rule>,
    check: &mut Option<syn::Path>,
) -> syn::Result<()> {
    const KEYWORDS: [(&str, &str, RuleKind); 7] = [
        ("minimum", "minimum", RuleKind::Number),
        ("maximum", "maximum", RuleKind::Number),
        ("min_length", "minLength", RuleKind::Text),
        ("max_length", "maxLength", RuleKind::Text),
        ("pattern", "pattern", RuleKind::Text),
        ("min_items", "minItems", RuleKind::Array),
        ("max_items", "maxItems", RuleKind::Array),
    ];
    meta.parse_nested_meta(|item| {
        if item.path.is_ident(CHECK) {
            if check.is_some() {
                return Err(item.error("a field has one `check` function"));
            }
            *check = Some(item.value()?.parse()?);
            return Ok(());
        }
        let Some((_, keyword, kind)) = KEYWORDS.iter().find(|(name, ..)| item.path.is_ident(name))
        else {
            return Err(item.error(format!(
                "unknown schema rule `{}`; expected `minimum`, `maximum`, `min_length`, `max_length`, `pattern`, `min_items`, `max_items` or `check`",
                path_text(&item.path)
            )));
        };
        let negative = item.value()?.parse::<Option<Token![-]>>()?.is_some();
        let value: syn::Lit = item.input.parse()?;
        let fits = match (&value, kind) {
            (syn::Lit::Str(_), RuleKind::Text) => *keyword == "pattern" && !negative,
            (syn::Lit::Int(_), RuleKind::Text | RuleKind::Array) => {
                *keyword != "pattern" && !negative
            }
            (syn::Lit::Int(_) | syn::Lit::Float(_), RuleKind::Number) => true,
            _ => false,
        };
        if !fits {
            return Err(syn::Error::new(
                value.span(),
                match kind {
                    RuleKind::Number => "a range bound is a number",
                    RuleKind::Text if *keyword == "pattern" => "a pattern is a string",
                    _ => "a length is a non-negative integer",
                },
            ));
        }
        let value = if negative { negate(&value) } else { value };
        rules.push(Rule {
            keyword,
            value,
            kind: *kind,
            span: item.path.span(),
        });
        Ok(())
    })
}

/// A numeric literal with a minus sign.
fn negate(value: &syn::Lit) -> syn::Lit {
    match value {
        syn::Lit::Int(n) => syn::Lit::Int(syn::LitInt::new(
            &format!("-{}", n.base10_digits()),
            n.span(),
        )),
        syn::Lit::Float(f) => syn::Lit::Float(syn::LitFloat::new(
            &format!("-{}", f.base10_digits()),
            f.span(),
        )),
        other => other.clone(),
    }
}

/// `index` or `index(...)`; `field` is the key of a field-level index.
fn index_decl(meta: &ParseNestedMeta<'_>, field: Option<KeyDecl>) -> syn::Result<IndexDecl> {
    let field_level = field.is_some();
    let mut decl = IndexDecl {
        keys: field.into_iter().collect(),
        unique: false,
        sparse: false,
        name: None,
        ttl: None,
        partial: Vec::new(),
        text: Vec::new(),
        language: None,
        language_override: None,
        span: meta.path.span(),
    };
    if meta.input.is_empty() || meta.input.peek(Token![,]) {
        return Ok(decl);
    }
    meta.parse_nested_meta(|item| {
        if item.path.is_ident(UNIQUE) {
            decl.unique = true;
        } else if item.path.is_ident(SPARSE) {
            decl.sparse = true;
        } else if let Some(kind) = field_kind(&item.path).filter(|_| field_level) {
            if decl.keys[0].kind != KeyKind::Ascending {
                return Err(item.error(
                    "a field's index has one kind: `desc`, `geo` and `flat` exclude each other",
                ));
            }
            decl.keys[0].kind = kind;
        } else if item.path.is_ident(TEXT) && field_level {
            return Err(item.error(
                "a text index is declared on the struct, over all its fields: `#[odm(index(text(field, ...)))]`",
            ));
        } else if item.path.is_ident(TEXT) {
            let content;
            syn::parenthesized!(content in item.input);
            decl.text = weighted_list(&content)?;
            if decl.text.is_empty() {
                return Err(item.error("a text index needs at least one field"));
            }
        } else if item.path.is_ident(DEFAULT_LANGUAGE) {
            decl.language = Some(item.value()?.parse::<syn::Ident>()?);
        } else if item.path.is_ident(LANGUAGE_OVERRIDE) {
            decl.language_override = Some(item.value()?.parse::<LitStr>()?);
        } else if item.path.is_ident(NAME) {
            decl.name = Some(item.value()?.parse::<LitStr>()?.value());
        } else if item.path.is_ident(TTL) {
            let lit: LitStr = item.value()?.parse()?;
            let seconds = parse_duration(&lit.value()).ok_or_else(|| {
                syn::Error::new(
                    lit.span(),
                    "a TTL is a number with a unit: `30s`, `15m`, `12h`, `365d`",
                )
            })?;
            decl.ttl = Some((seconds, lit));
        } else if item.path.is_ident(KEYS) {
            let content;
            syn::parenthesized!(content in item.input);
            decl.keys = key_list(&content, true)?;
        } else if item.path.is_ident(PARTIAL) {
            let content;
            syn::parenthesized!(content in item.input);
            while !content.is_empty() {
                let key = key_path(&content)?;
                content.parse::<Token![=]>()?;
                let value: syn::Lit = content.parse()?;
                decl.partial.push((key, value));
                if !content.is_empty() {
                    content.parse::<Token![,]>()?;
                }
            }
        } else {
            return Err(item.error(format!(
                "unknown index option `{}`; expected `keys`, `text`, `unique`, `sparse`, `name`, `ttl`, `partial`, `default_language` or `language_override` (on a field: `desc`, `geo`, `flat`)",
                path_text(&item.path)
            )));
        }
        Ok(())
    })?;
    Ok(decl)
}

fn shard_decl(meta: &ParseNestedMeta<'_>) -> syn::Result<ShardDecl> {
    let mut decl = ShardDecl {
        keys: Vec::new(),
        hashed: false,
        unique: None,
        span: meta.path.span(),
    };
    let content;
    syn::parenthesized!(content in meta.input);
    while !content.is_empty() {
        if content.peek(syn::Ident)
            && content.fork().parse::<syn::Ident>()? == HASHED
            && content.peek2(syn::token::Paren)
        {
            content.parse::<syn::Ident>()?;
            let inner;
            syn::parenthesized!(inner in content);
            decl.keys.push(key_path(&inner)?);
            decl.hashed = true;
        } else if content.peek(syn::Ident)
            && content.fork().parse::<syn::Ident>()? == UNIQUE
            && !content.peek2(Token![.])
        {
            let unique: syn::Ident = content.parse()?;
            decl.unique = Some(unique.span());
        } else {
            decl.keys.push(key_path(&content)?);
        }
        if !content.is_empty() {
            content.parse::<Token![,]>()?;
        }
    }
    Ok(decl)
}

/// `a = 1, "b.c" = -1`, or plain paths when directions are not allowed.
fn key_list(input: syn::parse::ParseStream<'_>, directions: bool) -> syn::Result<Vec<KeyDecl>> {
    let mut keys = Vec::new();
    while !input.is_empty() {
        let mut key = key_path(input)?;
        if directions {
            input.parse::<Token![=]>()?;
            if input.peek(LitStr) {
                let kind: LitStr = input.parse()?;
                key.kind = match kind.value().as_str() {
                    "2dsphere" => KeyKind::Sphere,
                    "2d" => KeyKind::Flat,
                    _ => {
                        return Err(syn::Error::new(
                            kind.span(),
                            "an index key is 1, -1, \"2dsphere\" or \"2d\" (a text index's fields go in `text(...)`)",
                        ));
                    }
                };
                keys.push(key);
                if !input.is_empty() {
                    input.parse::<Token![,]>()?;
                }
                continue;
            }
            let negative = input.parse::<Option<Token![-]>>()?.is_some();
            let n: syn::LitInt = input.parse()?;
            match (negative, n.base10_digits()) {
                (false, "1") => {}
                (true, "1") => key.kind = KeyKind::Descending,
                _ => return Err(syn::Error::new(n.span(), "an index direction is 1 or -1")),
            }
        }
        keys.push(key);
        if !input.is_empty() {
            input.parse::<Token![,]>()?;
        }
    }
    Ok(keys)
}

/// `title = 10, body`: text fields with their weights (1 when not given).
fn weighted_list(input: syn::parse::ParseStream<'_>) -> syn::Result<Vec<(KeyDecl, u32)>> {
    let mut fields = Vec::new();
    while !input.is_empty() {
        let key = key_path(input)?;
        let mut weight = 1;
        if input.parse::<Option<Token![=]>>()?.is_some() {
            let n: syn::LitInt = input.parse()?;
            weight = n
                .base10_parse::<u32>()
                .ok()
                .filter(|w| (1..100_000).contains(w))
                .ok_or_else(|| {
                    syn::Error::new(n.span(), "a text weight is a whole number from 1 to 99999")
                })?;
        }
        fields.push((key, weight));
        if !input.is_empty() {
            input.parse::<Token![,]>()?;
        }
    }
    Ok(fields)
}

/// A field name, or a string of dotted field names.
fn key_path(input: syn::parse::ParseStream<'_>) -> syn::Result<KeyDecl> {
    if input.peek(LitStr) {
        let lit: LitStr = input.parse()?;
        let path: Vec<String> = lit.value().split('.').map(str::to_owned).collect();
        if path.iter().any(String::is_empty) {
            return Err(syn::Error::new(
                lit.span(),
                "a key path has an empty segment",
            ));
        }
        return Ok(KeyDecl {
            path,
            kind: KeyKind::Ascending,
            span: lit.span(),
        });
    }
    let ident: syn::Ident = input.parse()?;
    Ok(KeyDecl {
        path: vec![ident.to_string()],
        kind: KeyKind::Ascending,
        span: ident.span(),
    })
}

/// The kind a field-level index option gives its key: `desc`, `geo` (`2dsphere`), `flat`
/// (`2d`).
fn field_kind(path: &syn::Path) -> Option<KeyKind> {
    if path.is_ident(DESC) {
        Some(KeyKind::Descending)
    } else if path.is_ident(GEO) {
        Some(KeyKind::Sphere)
    } else if path.is_ident(FLAT) {
        Some(KeyKind::Flat)
    } else {
        None
    }
}

/// `30s`, `15m`, `12h`, `365d`, `2w` as seconds.
fn parse_duration(text: &str) -> Option<u64> {
    let (number, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit())?);
    let n: u64 = number.parse().ok()?;
    let scale = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3_600,
        "d" => 86_400,
        "w" => 604_800,
        _ => return None,
    };
    n.checked_mul(scale)
}

fn field_model<'a>(
    cx: &Ctxt,
    field: &'a syn::Field,
    rename_all: RenameRule,
    kind: Kind,
) -> Option<FieldModel<'a>> {
    let ident = field.ident.as_ref()?;
    let rust_name = ident.to_string();
    let rust_name = rust_name
        .strip_prefix("r#")
        .unwrap_or(&rust_name)
        .to_owned();
    let mut model = FieldModel {
        ident,
        ty: &field.ty,
        bson_name: rename_all.apply(&rust_name),
        id: None,
        index: None,
        embedded: false,
        skipped: false,
        kept: None,
        rules: Vec::new(),
        check: None,
    };
    for attr in &field.attrs {
        if attr.path().is_ident(SERDE) {
            serde_field(attr, &mut model);
        } else if attr.path().is_ident(ODM) {
            let parsed = attr.parse_nested_meta(|meta| {
                if meta.path.is_ident(ID) {
                    if kind == Kind::Embedded {
                        cx.error_spanned_by(&meta.path, "an embedded type has no id field");
                    }
                    model.id = Some(meta.path.span());
                } else if meta.path.is_ident(EMBEDDED) {
                    model.embedded = true;
                } else if meta.path.is_ident(INDEX) {
                    if kind == Kind::Embedded {
                        cx.error_spanned_by(
                            &meta.path,
                            "indexes belong on the #[derive(Document)] model that stores this type",
                        );
                    }
                    let key = KeyDecl {
                        path: vec![rust_name.clone()],
                        kind: KeyKind::Ascending,
                        span: ident.span(),
                    };
                    model.index = Some(index_decl(&meta, Some(key))?);
                } else if meta.path.is_ident(SCHEMA) {
                    field_rules(&meta, &mut model.rules, &mut model.check)?;
                } else if let Some(kept) = kept_attribute(&meta.path) {
                    if kind == Kind::Embedded {
                        cx.error_spanned_by(
                            &meta.path,
                            format!("`{}` belongs on a field of the #[derive(Document)] model, which the ODM writes", kept.attribute()),
                        );
                    }
                    if let Some((earlier, _)) = model.kept {
                        cx.error_spanned_by(
                            &meta.path,
                            format!("this field is already `{}`; a field is kept as one thing", earlier.attribute()),
                        );
                    }
                    model.kept = Some((kept, meta.path.span()));
                } else {
                    return Err(meta.error(format!(
                        "unknown odm field attribute `{}`; expected `id`, `index`, `embedded`, `created_at`, `updated_at`, `version` or `schema`",
                        path_text(&meta.path)
                    )));
                }
                Ok(())
            });
            if let Err(e) = parsed {
                cx.syn_error(e);
            }
        }
    }
    Some(model)
}

/// `created_at`, `updated_at` or `version` on a field.
fn kept_attribute(path: &syn::Path) -> Option<Kept> {
    if path.is_ident(CREATED_AT) {
        Some(Kept::CreatedAt)
    } else if path.is_ident(UPDATED_AT) {
        Some(Kept::UpdatedAt)
    } else if path.is_ident(VERSION) {
        Some(Kept::Revision)
    } else {
        None
    }
}

pub fn serde_container(cx: &Ctxt, attr: &syn::Attribute, rename_all: &mut RenameRule) {
    let _ = attr.parse_nested_meta(|meta| {
        if meta.path.is_ident(RENAME_ALL) {
            if let Some(rule) = serialize_name(&meta)? {
                match RenameRule::parse(&rule.value()) {
                    Some(r) => *rename_all = r,
                    None => cx.error_spanned_by(&rule, "unknown rename_all rule"),
                }
            }
        } else {
            skip_meta(&meta)?;
        }
        Ok(())
    });
}

fn serde_field(attr: &syn::Attribute, model: &mut FieldModel<'_>) {
    let _ = attr.parse_nested_meta(|meta| {
        if meta.path.is_ident(RENAME) {
            if let Some(name) = serialize_name(&meta)? {
                model.bson_name = name.value();
            }
        } else if meta.path.is_ident(SKIP)
            || meta.path.is_ident(SKIP_SERIALIZING)
            || meta.path.is_ident(FLATTEN)
        {
            model.skipped = true;
            skip_meta(&meta)?;
        } else {
            skip_meta(&meta)?;
        }
        Ok(())
    });
}

/// `rename = "x"` or `rename(serialize = "x", deserialize = "y")`: the serialized name.
pub fn serialize_name(meta: &ParseNestedMeta<'_>) -> syn::Result<Option<LitStr>> {
    if meta.input.peek(Token![=]) {
        return Ok(Some(meta.value()?.parse()?));
    }
    let mut found = None;
    meta.parse_nested_meta(|inner| {
        let value: LitStr = inner.value()?.parse()?;
        if inner.path.is_ident("serialize") {
            found = Some(value);
        }
        Ok(())
    })?;
    Ok(found)
}

/// Consumes a serde option this derive does not read (serde checks it).
fn skip_meta(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        meta.value()?.parse::<syn::Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        let content;
        syn::parenthesized!(content in meta.input);
        content.parse::<proc_macro2::TokenStream>()?;
    }
    Ok(())
}
