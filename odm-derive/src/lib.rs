//! `#[derive(Document)]` (on an enum: an enum model, in `variants`), `#[derive(Embedded)]` and
//! `#[derive(Schema)]` (unit-only enums, in `enumeration`) for the odm crate. A proc-macro crate: it
//! depends on syn, quote and proc-macro2 only, and names `odm`'s items through the paths the
//! generated code writes (`odm::__private`), never as a dependency.
//!
//! Each derive runs four stages, one module each: `attr` parses `#[odm(...)]` and serde's
//! renames into the `ast` model, `check` validates it (every error spanned at the offending
//! token), `expand` generates the impls. `types` reads what a field's type tokens tell,
//! `case` holds serde's renaming rules, `ctxt` collects errors.

mod ast;
mod attr;
mod case;
mod check;
mod ctxt;
mod enumeration;
mod expand;
mod symbol;
mod types;
mod variants;

use proc_macro::TokenStream;
use syn::{DeriveInput, parse_macro_input};

use crate::ast::Kind;

/// Derives `odm::Document`: see the odm crate's documentation for the attributes.
#[proc_macro_derive(Document, attributes(odm))]
pub fn derive_document(input: TokenStream) -> TokenStream {
    derive(&parse_macro_input!(input as DeriveInput), Kind::Document)
}

/// Derives `odm::Embedded`, for types stored inside models.
#[proc_macro_derive(Embedded, attributes(odm))]
pub fn derive_embedded(input: TokenStream) -> TokenStream {
    derive(&parse_macro_input!(input as DeriveInput), Kind::Embedded)
}

/// Derives `odm::Schema` for a unit-only enum: a string among the names serde writes for its
/// variants (after `rename_all` and `rename`), for `#[odm(schema)]` models.
#[proc_macro_derive(Schema, attributes(odm))]
pub fn derive_schema(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    let cx = ctxt::Ctxt::new();
    let expanded = enumeration::expand(&cx, &input);
    match cx.check() {
        Ok(()) => expanded.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

fn derive(input: &DeriveInput, kind: Kind) -> TokenStream {
    let cx = ctxt::Ctxt::new();
    if let (syn::Data::Enum(data), Kind::Document) = (&input.data, kind) {
        let expanded = variants::expand(&cx, input, data);
        return match cx.check() {
            Ok(()) => expanded.into(),
            Err(e) => e.to_compile_error().into(),
        };
    }
    let expanded = attr::container(&cx, input, kind).map(|model| {
        check::check(&cx, &model);
        expand::expand(&model)
    });
    match cx.check() {
        Ok(()) => expanded.unwrap_or_default().into(),
        Err(e) => e.to_compile_error().into(),
    }
}
