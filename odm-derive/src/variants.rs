//! `#[derive(Document)]` on an enum: an enum model, each variant holding one model of the same
//! collection, stored with serde's internally tagged representation (see `odm::Variant`).
//!
//! Rules, each an error at the offending token: serde's `tag` is given (and not `content` or
//! `untagged`); every variant holds exactly one model (`Book(Book)`); the enum has no type
//! parameters; `collection` is given; no variant's handle name is `tag` or `id`. Each variant's
//! model naming the enum's collection and the same id field is checked at compile time by
//! generated constants; the same id type by `document_id`'s match.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use crate::attr::{serde_container, serialize_name};
use crate::case::RenameRule;
use crate::ctxt::Ctxt;
use crate::symbol::{COLLECTION, CRATE, ODM, RENAME, SERDE, SHARED};

/// A field every variant's model has, declared on the enum (`shared(title: String)`): it
/// gets a handle on the enum.
struct Shared {
    name: syn::Ident,
    ty: syn::Type,
}

impl syn::parse::Parse for Shared {
    fn parse(input: syn::parse::ParseStream<'_>) -> syn::Result<Self> {
        let name = input.parse()?;
        input.parse::<syn::Token![:]>()?;
        Ok(Shared {
            name,
            ty: input.parse()?,
        })
    }
}

/// One variant: its name, the model it holds, its discriminator value, its handle's name.
struct VariantModel<'a> {
    ident: &'a syn::Ident,
    ty: &'a syn::Type,
    tag: String,
    handle: syn::Ident,
}

pub fn expand(cx: &Ctxt, input: &syn::DeriveInput, data: &syn::DataEnum) -> TokenStream {
    if !input.generics.params.is_empty() {
        cx.error_spanned_by(&input.generics, "an enum model has no type parameters");
    }
    let mut collection = None;
    let mut krate: syn::Path = syn::parse_quote!(::odm);
    let mut shared = Vec::new();
    for attr in input.attrs.iter().filter(|a| a.path().is_ident(ODM)) {
        let parsed = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident(COLLECTION) {
                collection = Some(meta.value()?.parse::<syn::LitStr>()?.value());
            } else if meta.path.is_ident(SHARED) {
                let content;
                syn::parenthesized!(content in meta.input);
                let fields =
                    syn::punctuated::Punctuated::<Shared, syn::Token![,]>::parse_terminated(
                        &content,
                    )?;
                shared.extend(fields);
            } else if meta.path.is_ident(CRATE) {
                krate = meta.value()?.parse::<syn::LitStr>()?.parse()?;
            } else {
                return Err(meta.error(
                    "an enum model takes `collection`, `shared` (and `crate`); indexes, keys and schemas belong on its variants' models",
                ));
            }
            Ok(())
        });
        if let Err(e) = parsed {
            cx.syn_error(e);
        }
    }
    let Some(collection) = collection else {
        cx.error_spanned_by(
            &input.ident,
            "an enum model needs `#[odm(collection = \"...\")]`",
        );
        return TokenStream::new();
    };
    let (tag_field, rename_all) = serde_tag(cx, input);
    let variants = variant_models(cx, data, rename_all);
    let Some(tag_field) = tag_field else {
        return TokenStream::new();
    };
    check_shared_names(cx, &shared, &variants);
    generate(input, &krate, &collection, &tag_field, &variants, &shared)
}

/// A shared field's handle sits beside `tag`, `id` and the variants' handles: its name may
/// be none of theirs, nor declared twice.
fn check_shared_names(cx: &Ctxt, shared: &[Shared], variants: &[VariantModel<'_>]) {
    for (i, field) in shared.iter().enumerate() {
        let taken = field.name == "tag"
            || field.name == "id"
            || variants.iter().any(|v| v.handle == field.name)
            || shared[..i].iter().any(|earlier| earlier.name == field.name);
        if taken {
            cx.error_spanned_by(
                &field.name,
                "a shared field's handle is named like the discriminator (`tag`), the id, a variant or another shared field",
            );
        }
    }
}

/// serde's `tag` and `rename_all` on the enum; an error without a tag.
fn serde_tag(cx: &Ctxt, input: &syn::DeriveInput) -> (Option<String>, RenameRule) {
    let mut tag = None;
    let mut rename_all = RenameRule::None;
    for attr in input.attrs.iter().filter(|a| a.path().is_ident(SERDE)) {
        serde_container(cx, attr, &mut rename_all);
        let _ = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("tag") {
                tag = Some(meta.value()?.parse::<syn::LitStr>()?.value());
            } else if meta.path.is_ident("content") || meta.path.is_ident("untagged") {
                cx.error_spanned_by(
                    &meta.path,
                    "an enum model is stored internally tagged: give serde's `tag` alone",
                );
            }
            if meta.input.peek(syn::Token![=]) {
                meta.value()?.parse::<syn::Expr>()?;
            } else if meta.input.peek(syn::token::Paren) {
                let content;
                syn::parenthesized!(content in meta.input);
                content.parse::<TokenStream>()?;
            }
            Ok(())
        });
    }
    if tag.is_none() {
        cx.error_spanned_by(
            &input.ident,
            "an enum model is stored with a discriminator field: add `#[serde(tag = \"type\")]` (any name)",
        );
    }
    (tag, rename_all)
}

fn variant_models<'a>(
    cx: &Ctxt,
    data: &'a syn::DataEnum,
    rename_all: RenameRule,
) -> Vec<VariantModel<'a>> {
    let mut models = Vec::new();
    for variant in &data.variants {
        let syn::Fields::Unnamed(fields) = &variant.fields else {
            cx.error_spanned_by(
                &variant.ident,
                "each variant of an enum model holds one model: `Book(Book)`",
            );
            continue;
        };
        let [field] = fields.unnamed.iter().collect::<Vec<_>>()[..] else {
            cx.error_spanned_by(
                &variant.ident,
                "each variant of an enum model holds one model: `Book(Book)`",
            );
            continue;
        };
        for attr in variant.attrs.iter().filter(|a| a.path().is_ident(ODM)) {
            cx.error_spanned_by(
                attr,
                "a variant of an enum model takes no odm attribute: declare indexes and fields on its model",
            );
        }
        let mut tag = rename_all.apply_to_variant(&variant.ident.to_string());
        for attr in variant.attrs.iter().filter(|a| a.path().is_ident(SERDE)) {
            let _ = attr.parse_nested_meta(|meta| {
                if meta.path.is_ident(RENAME)
                    && let Some(name) = serialize_name(&meta)?
                {
                    tag = name.value();
                } else if meta.input.peek(syn::Token![=]) {
                    meta.value()?.parse::<syn::Expr>()?;
                }
                Ok(())
            });
        }
        let handle = format_ident!(
            "{}",
            RenameRule::Snake.apply_to_variant(&variant.ident.to_string())
        );
        if handle == "tag" || handle == "id" {
            cx.error_spanned_by(
                &variant.ident,
                "an enum model's handles `tag` and `id` are the discriminator and the id: rename this variant",
            );
        }
        models.push(VariantModel {
            ident: &variant.ident,
            ty: &field.ty,
            tag,
            handle,
        });
    }
    models
}

/// Each variant's indexes are the collection's: two text indexes would be refused when it
/// opens, so at most one variant may declare one (a constant assertion).
fn one_text_index(variants: &[VariantModel<'_>], document: &TokenStream) -> TokenStream {
    let text_counts = variants.iter().map(|v| {
        let ty = v.ty;
        quote!((<#ty as #document>::HAS_TEXT_INDEX as usize))
    });
    quote! {
        const _: () = ::std::assert!(
            0 #(+ #text_counts)* <= 1,
            "the variants of an enum model share one collection, which has at most one text index: declare it on one variant"
        );
    }
}

fn generate(
    input: &syn::DeriveInput,
    krate: &syn::Path,
    collection: &str,
    tag_field: &str,
    variants: &[VariantModel<'_>],
    shared: &[Shared],
) -> TokenStream {
    let ident = &input.ident;
    let vis = &input.vis;
    let fields = format_ident!("{}Fields", ident);
    let Some(first) = variants.first() else {
        return quote_spanned!(Span::call_site()=> compile_error!("an enum model has at least one variant"););
    };
    let first_ty = first.ty;
    let document = quote!(#krate::Document);
    let handle_decls = variants.iter().map(|v| {
        let (handle, ty) = (&v.handle, v.ty);
        let doc = format!("The handles of the `{}` variant's model.", v.ident);
        quote!(#[doc = #doc] pub #handle: <#ty as #document>::Fields)
    });
    let handle_inits = variants.iter().map(|v| {
        let (handle, ty) = (&v.handle, v.ty);
        quote!(#handle: <#ty as #document>::fields())
    });
    let ids = variants.iter().map(|v| {
        let (variant, ty) = (v.ident, v.ty);
        quote_spanned!(ty.span()=> #ident::#variant(value) => <#ty as #document>::document_id(value))
    });
    let checks = variants.iter().map(|v| {
        let (variant, ty) = (v.ident, v.ty);
        quote!(#ident::#variant(value) => <#ty as #document>::check_fields(value))
    });
    let one_text_index = one_text_index(variants, &document);
    let indexes = variants.iter().map(|v| {
        let (ty, tag) = (v.ty, &v.tag);
        quote!(__indexes.extend(#krate::__private::variant_indexes::<#ty>(#tag_field, #tag));)
    });
    let impls = variants
        .iter()
        .map(|v| variant_impl(krate, ident, collection, tag_field, first_ty, v));
    let shared_decls = shared.iter().map(|field| {
        let (name, ty) = (&field.name, &field.ty);
        let doc = format!("The field `{name}` every variant's model has.");
        quote!(#[doc = #doc] pub #name: #krate::Field<#ident, #ty>)
    });
    let shared_inits = shared.iter().map(|field| {
        let name = &field.name;
        quote!(#name: #krate::Field::new(<#first_ty as #document>::fields().#name.path()))
    });
    let shared_checks = shared_checks(krate, variants, shared);
    let doc = format!("Field handles of the enum model [`{ident}`], from `{ident}::fields()`.");
    quote! {
        #[doc = #doc]
        #[allow(dead_code)]
        #vis struct #fields {
            /// The discriminator field.
            pub tag: #krate::Field<#ident, ::std::string::String>,
            /// The `_id` all variants share.
            pub id: #krate::Field<#ident, <#first_ty as #document>::Id>,
            #(#shared_decls,)*
            #(#handle_decls,)*
        }

        #[allow(clippy::all, clippy::pedantic)]
        const _: () = {
            #[automatically_derived]
            impl #document for #ident {
                type Fields = #fields;
                type Id = <#first_ty as #document>::Id;
                const COLLECTION: &'static str = #collection;
                const ID_FIELD: &'static str = <#first_ty as #document>::ID_FIELD;

                fn fields() -> #fields {
                    #fields {
                        tag: #krate::Field::new(#tag_field),
                        id: #krate::Field::new("_id"),
                        #(#shared_inits,)*
                        #(#handle_inits,)*
                    }
                }

                fn document_id(&self) -> &Self::Id {
                    match self {
                        #(#ids,)*
                    }
                }

                fn check_fields(&self) -> ::std::result::Result<(), #krate::SchemaProblem> {
                    match self {
                        #(#checks,)*
                    }
                }

                fn indexes() -> ::std::vec::Vec<#krate::__private::IndexSpec> {
                    let mut __indexes = ::std::vec::Vec::new();
                    #(#indexes)*
                    __indexes
                }

                fn shard_key() -> ::std::option::Option<#krate::__private::ShardKey> {
                    ::std::option::Option::None
                }

                fn inconsistency() -> ::std::option::Option<::std::string::String> {
                    #shared_checks
                    ::std::option::Option::None
                }
            }

            #(#impls)*
            #one_text_index
        };
    }
}

/// The checks of the shared fields: at compile time, each variant's model has a handle of the
/// declared name and type (the closures are type-checked, never called); at the collection's
/// first open, each stores the field under the first variant's path (serde's renames may
/// differ), else the model is refused.
fn shared_checks(
    krate: &syn::Path,
    variants: &[VariantModel<'_>],
    shared: &[Shared],
) -> TokenStream {
    let document = quote!(#krate::Document);
    let Some(first) = variants.first() else {
        return TokenStream::new();
    };
    let first_ty = first.ty;
    let document = &document;
    let checks = shared.iter().flat_map(|field| {
        variants.iter().map(move |v| {
            let (name, ty, vty) = (&field.name, &field.ty, v.ty);
            let typed = quote_spanned! {name.span()=>
                let _: fn() -> #krate::Field<#vty, #ty> = || <#vty as #document>::fields().#name;
            };
            let message = format!(
                "the shared field `{name}` is stored as `{{}}` by `{}` and as `{{}}` by `{}`",
                quote!(#first_ty),
                quote!(#vty)
            );
            quote! {
                #typed
                let (__first, __this) = (
                    <#first_ty as #document>::fields().#name.path().to_owned(),
                    <#vty as #document>::fields().#name.path().to_owned(),
                );
                if __first != __this {
                    return ::std::option::Option::Some(::std::format!(#message, __first, __this));
                }
            }
        })
    });
    quote!(#(#checks)*)
}

/// `Variant<Enum>` for one variant's model, and the compile-time checks that it names the
/// enum's collection and calls its id as the first variant's model does.
fn variant_impl(
    krate: &syn::Path,
    ident: &syn::Ident,
    collection: &str,
    tag_field: &str,
    first_ty: &syn::Type,
    v: &VariantModel<'_>,
) -> TokenStream {
    let (variant, ty, tag) = (v.ident, v.ty, &v.tag);
    let document = quote!(#krate::Document);
    let same = quote!(#krate::__private::same_str);
    let collection_check =
        format!("every variant of an enum model is a model of its collection `{collection}`");
    quote_spanned! {ty.span()=>
        const _: () = ::std::assert!(
            #same(<#ty as #document>::COLLECTION, #collection),
            #collection_check
        );
        const _: () = ::std::assert!(
            #same(<#ty as #document>::ID_FIELD, <#first_ty as #document>::ID_FIELD),
            "the variants' models of an enum model call their id field by one name"
        );

        #[automatically_derived]
        impl #krate::Variant<#ident> for #ty {
            const TAG_FIELD: &'static str = #tag_field;
            const TAG: &'static str = #tag;

            fn into_model(self) -> #ident {
                #ident::#variant(self)
            }

            fn from_model(model: #ident) -> ::std::option::Option<Self> {
                match model {
                    #ident::#variant(value) => ::std::option::Option::Some(value),
                    #[allow(unreachable_patterns)]
                    _ => ::std::option::Option::None,
                }
            }
        }
    }
}
