//! The model of a deriving type: names as serde writes them, and what the attributes declare.

use proc_macro2::Span;
use syn::LitStr;

/// Which derive.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Document,
    Embedded,
}

/// The deriving struct.
pub struct Container<'a> {
    pub ident: &'a syn::Ident,
    pub vis: &'a syn::Visibility,
    /// Type and const parameters, with the bounds the user wrote (no lifetimes: checked).
    pub generics: &'a syn::Generics,
    pub kind: Kind,
    /// `collection = "..."` and its token.
    pub collection: Option<(String, Span)>,
    pub crate_path: Option<syn::Path>,
    /// Struct-level `index(...)` declarations.
    pub indexes: Vec<IndexDecl>,
    pub shard_key: Option<ShardDecl>,
    /// `version = N`, `from = Previous`, `migrate = function`.
    pub version: Option<(u32, Span)>,
    pub from: Option<syn::Type>,
    pub migrate: Option<syn::Path>,
    /// `hooks`: the model implements `odm::Hooks`; its token.
    pub hooks: Option<Span>,
    /// `schema` or `schema(level = "..", action = "..")`.
    pub schema: Option<SchemaDecl>,
    pub fields: Vec<FieldModel<'a>>,
}

/// One named field.
pub struct FieldModel<'a> {
    pub ident: &'a syn::Ident,
    pub ty: &'a syn::Type,
    /// The name serde writes (after `rename` and `rename_all`).
    pub bson_name: String,
    /// The `id` token, when the field is the model's id.
    pub id: Option<Span>,
    /// A field-level `index`.
    pub index: Option<IndexDecl>,
    /// Marked `embedded`: its type derives `Embedded`, so paths continue into it.
    pub embedded: bool,
    /// Skipped or flattened by serde: not stored under its own name, so no handle.
    pub skipped: bool,
    /// `created_at`, `updated_at` or `version`: a field the ODM writes itself, and its token.
    pub kept: Option<(Kept, Span)>,
    /// `schema(minimum = .., ...)`: JSON Schema keywords for the field.
    pub rules: Vec<Rule>,
    /// `schema(check = f)`: a function run on the field's value before each write of the
    /// whole value (client side), `fn(&T) -> Result<(), String>`.
    pub check: Option<syn::Path>,
}

/// A model's `schema` declaration: its validation level and action, checked names.
pub struct SchemaDecl {
    pub level: String,
    pub action: String,
}

/// What a field rule constrains, so that it is declared on a field of that kind.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum RuleKind {
    Text,
    Number,
    Array,
}

/// One field rule: JSON Schema's keyword, its value, what it constrains, its token.
pub struct Rule {
    pub keyword: &'static str,
    pub value: syn::Lit,
    pub kind: RuleKind,
    pub span: Span,
}

/// A field the ODM keeps on every write (see `odm::Document::CREATED_AT`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kept {
    CreatedAt,
    UpdatedAt,
    /// `#[odm(version)]`: the document's revision, for optimistic concurrency.
    Revision,
}

impl Kept {
    /// The attribute that declares it.
    pub fn attribute(self) -> &'static str {
        match self {
            Kept::CreatedAt => "created_at",
            Kept::UpdatedAt => "updated_at",
            Kept::Revision => "version",
        }
    }
}

/// An index declaration (field-level ones have one key, the field).
pub struct IndexDecl {
    pub keys: Vec<KeyDecl>,
    pub unique: bool,
    pub sparse: bool,
    pub name: Option<String>,
    /// Seconds, and the literal they came from.
    pub ttl: Option<(u64, syn::LitStr)>,
    /// Equality conditions of a partial index: path and value.
    pub partial: Vec<(KeyDecl, syn::Lit)>,
    /// A text index's fields, after `keys` (its prefix), with their weights.
    pub text: Vec<(KeyDecl, u32)>,
    /// A text index's `default_language`, a variant of `odm::Language`.
    pub language: Option<syn::Ident>,
    /// A text index's `language_override`, the field naming a document's language.
    pub language_override: Option<LitStr>,
    /// The `index` token, for errors about the whole declaration.
    pub span: Span,
}

impl IndexDecl {
    /// Whether the index is a text index or holds a geo key: declared by MongoDB's index
    /// document rather than by directions.
    pub fn is_search(&self) -> bool {
        !self.text.is_empty() || self.keys.iter().any(|k| k.kind.is_geo())
    }
}

/// One key path, in Rust field names, with its kind.
#[derive(Clone)]
pub struct KeyDecl {
    pub path: Vec<String>,
    pub kind: KeyKind,
    /// The token the path was written as.
    pub span: Span,
}

/// How a key orders or indexes its field.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    Ascending,
    Descending,
    /// `2dsphere`: GeoJSON and legacy pairs on the sphere.
    Sphere,
    /// `2d`: legacy pairs on a plane.
    Flat,
}

impl KeyKind {
    pub fn is_geo(self) -> bool {
        matches!(self, KeyKind::Sphere | KeyKind::Flat)
    }
}

impl KeyDecl {
    pub fn dotted(&self) -> String {
        self.path.join(".")
    }
}

/// A `shard_key(...)` declaration.
pub struct ShardDecl {
    pub keys: Vec<KeyDecl>,
    pub hashed: bool,
    /// A `unique` token inside the declaration.
    pub unique: Option<Span>,
    pub span: Span,
}

impl<'a> Container<'a> {
    pub fn field(&self, rust_name: &str) -> Option<&FieldModel<'a>> {
        self.fields.iter().find(|f| f.ident == rust_name)
    }

    /// The type parameter a type names when it is one alone (`M`, not `Vec<M>`).
    pub fn type_parameter(&self, ty: &syn::Type) -> Option<&'a syn::Ident> {
        let syn::Type::Path(path) = ty else {
            return None;
        };
        let ident = path.path.get_ident()?;
        self.generics
            .type_params()
            .map(|p| &p.ident)
            .find(|p| *p == ident)
    }

    /// The field kept as `kept`, if the model declares one.
    pub fn kept(&self, kept: Kept) -> Option<&FieldModel<'a>> {
        self.fields
            .iter()
            .find(|f| f.kept.is_some_and(|(k, _)| k == kept))
    }

    /// Every index declaration, field-level ones included.
    pub fn all_indexes(&self) -> impl Iterator<Item = &IndexDecl> {
        self.fields
            .iter()
            .filter_map(|f| f.index.as_ref())
            .chain(&self.indexes)
    }
}
