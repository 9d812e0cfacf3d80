//! `#[derive(Schema)]` on a unit-only enum: its `$jsonSchema` is a string among the names
//! serde writes for the variants, after the enum's `rename_all` and each variant's `rename`.
//! An enum with data, or a struct, is an error: a struct's schema comes from
//! `#[derive(Embedded)]` with `#[odm(schema)]`.

use proc_macro2::TokenStream;
use quote::quote;

use crate::attr::{serde_container, serialize_name};
use crate::case::RenameRule;
use crate::ctxt::Ctxt;
use crate::symbol::{CRATE, ODM, RENAME, SERDE};

pub fn expand(cx: &Ctxt, input: &syn::DeriveInput) -> TokenStream {
    let syn::Data::Enum(data) = &input.data else {
        cx.error_spanned_by(
            &input.ident,
            "#[derive(Schema)] is for unit-only enums; a struct's schema comes from #[derive(Embedded)] with #[odm(schema)]",
        );
        return TokenStream::new();
    };
    let mut rename_all = RenameRule::None;
    let mut krate: syn::Path = syn::parse_quote!(::odm);
    for attr in &input.attrs {
        if attr.path().is_ident(SERDE) {
            serde_container(cx, attr, &mut rename_all);
        } else if attr.path().is_ident(ODM) {
            let parsed = attr.parse_nested_meta(|meta| {
                if meta.path.is_ident(CRATE) {
                    krate = meta.value()?.parse::<syn::LitStr>()?.parse()?;
                    Ok(())
                } else {
                    Err(meta.error("a unit-only enum's schema takes no odm attribute but `crate`"))
                }
            });
            if let Err(e) = parsed {
                cx.syn_error(e);
            }
        }
    }
    let mut names = Vec::new();
    for variant in &data.variants {
        if !matches!(variant.fields, syn::Fields::Unit) {
            cx.error_spanned_by(
                &variant.ident,
                "a variant with data has no schema of a string: #[derive(Schema)] is for unit-only enums",
            );
            continue;
        }
        names.push(variant_name(variant, rename_all));
    }
    let ident = &input.ident;
    let (impl_generics, type_generics, where_clause) = input.generics.split_for_impl();
    quote! {
        #[automatically_derived]
        impl #impl_generics #krate::Schema for #ident #type_generics #where_clause {
            fn json_schema() -> #krate::__private::bson::Document {
                #krate::__private::schema::enumeration(&[#(#names),*])
            }
        }
    }
}

/// The name serde writes for a unit variant.
fn variant_name(variant: &syn::Variant, rename_all: RenameRule) -> String {
    let mut name = rename_all.apply_to_variant(&variant.ident.to_string());
    for attr in variant.attrs.iter().filter(|a| a.path().is_ident(SERDE)) {
        let _ = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident(RENAME) {
                if let Some(renamed) = serialize_name(&meta)? {
                    name = renamed.value();
                }
            } else if meta.input.peek(syn::Token![=]) {
                meta.value()?.parse::<syn::Expr>()?;
            } else if meta.input.peek(syn::token::Paren) {
                let content;
                syn::parenthesized!(content in meta.input);
                content.parse::<TokenStream>()?;
            }
            Ok(())
        });
    }
    name
}
