//! Generating the impls from a checked model.
//!
//! Generated code names everything through the odm crate's path (`::odm` unless
//! `#[odm(crate = "...")]`), sits in `const _: () = { ... }` apart from the handles struct,
//! and iterates only over ordered data, so the output is deterministic. Index paths are read
//! from the handles at run time (`fields.publisher.name.path()`), so serde renames inside
//! embedded types apply, and a misspelt field inside an embedded type is a compile error at the
//! path's token.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};

use crate::ast::{Container, IndexDecl, KeyDecl, Kind};
use crate::types::element;

pub fn expand(c: &Container<'_>) -> TokenStream {
    let krate = c
        .crate_path
        .clone()
        .unwrap_or_else(|| syn::parse_quote!(::odm));
    match c.kind {
        Kind::Document => document(c, &krate),
        Kind::Embedded => embedded(c, &krate),
    }
}

fn fields_ident(c: &Container<'_>) -> syn::Ident {
    format_ident!("{}Fields", c.ident)
}

/// The handle type and its initialiser for each stored field, rooted in `root`, whose paths
/// start under `prefix` (an expression of type `&str`).
fn handles(
    c: &Container<'_>,
    krate: &syn::Path,
    root: &TokenStream,
    prefix: &TokenStream,
) -> (Vec<TokenStream>, Vec<TokenStream>) {
    let mut declarations = Vec::new();
    let mut initialisers = Vec::new();
    for field in c.fields.iter().filter(|f| !f.skipped) {
        let ident = field.ident;
        let ty = field.ty;
        let name = if field.id.is_some() {
            "_id".to_owned()
        } else {
            field.bson_name.clone()
        };
        let doc = format!("The `{name}` field.");
        if field.embedded {
            let elem = element(ty);
            declarations.push(quote! {
                #[doc = #doc]
                pub #ident: <#elem as #krate::Embedded>::Fields<#root, #ty>
            });
            initialisers.push(quote! {
                #ident: <#elem as #krate::Embedded>::fields_at::<#root, #ty>(
                    &#krate::__private::join(#prefix, #name)
                )
            });
        } else {
            declarations.push(quote! {
                #[doc = #doc]
                pub #ident: #krate::Field<#root, #ty>
            });
            initialisers.push(quote! {
                #ident: #krate::Field::new(#krate::__private::join(#prefix, #name))
            });
        }
    }
    (declarations, initialisers)
}

fn document(c: &Container<'_>, krate: &syn::Path) -> TokenStream {
    let ident = c.ident;
    let vis = c.vis;
    let fields = fields_ident(c);
    let root = quote!(#ident);
    let (declarations, initialisers) = handles(c, krate, &root, &quote!(""));
    let collection = c
        .collection
        .as_ref()
        .map_or_else(|| snake_case(&ident.to_string()), |(name, _)| name.clone());
    let id_field = c
        .fields
        .iter()
        .find(|f| f.id.is_some())
        .map_or_else(|| "_id".to_owned(), |f| f.bson_name.clone());
    let indexes = c.all_indexes().map(|index| index_spec(krate, index));
    let shard_key = shard_key(c, krate);
    let version = c.version.map_or(0, |(n, _)| n);
    let upgrade = upgrade(c, krate);
    let doc = format!("Field handles of [`{ident}`], from `{ident}::fields()`.");
    quote! {
        #[doc = #doc]
        #[allow(dead_code)]
        #vis struct #fields {
            #(#declarations,)*
        }

        #[allow(clippy::all, clippy::pedantic)]
        const _: () = {
            #[automatically_derived]
            impl #krate::Document for #ident {
                type Fields = #fields;
                const COLLECTION: &'static str = #collection;
                const ID_FIELD: &'static str = #id_field;
                const VERSION: u32 = #version;

                fn fields() -> #fields {
                    #fields { #(#initialisers,)* }
                }

                fn indexes() -> ::std::vec::Vec<#krate::__private::IndexSpec> {
                    let __fields = <Self as #krate::Document>::fields();
                    let mut __indexes = ::std::vec::Vec::new();
                    #( __indexes.push(#indexes); )*
                    __indexes
                }

                fn shard_key() -> ::std::option::Option<#krate::__private::ShardKey> {
                    #shard_key
                }

                #upgrade
            }
        };
    }
}

fn embedded(c: &Container<'_>, krate: &syn::Path) -> TokenStream {
    let ident = c.ident;
    let vis = c.vis;
    let fields = fields_ident(c);
    let (declarations, initialisers) = handles(c, krate, &quote!(R), &quote!(prefix));
    let doc = format!(
        "Field handles of [`{ident}`] inside a model `R`, for a field holding a `W` (`{ident}` or an array of them)."
    );
    quote! {
        #[doc = #doc]
        #[allow(dead_code)]
        #vis struct #fields<R, W> {
            #(#declarations,)*
            __this: #krate::Field<R, W>,
        }

        #[allow(clippy::all, clippy::pedantic)]
        const _: () = {
            #[automatically_derived]
            impl<R, W> #fields<R, W> {
                /// The handle on the whole value (also reached through `Deref`).
                pub fn this(&self) -> #krate::Field<R, W> {
                    self.__this.clone()
                }
            }

            /// The handles act as the handle on the whole value: filters and updates of the
            /// whole subdocument or array (`reviews.push(..)`, `publisher.eq(..)`).
            #[automatically_derived]
            impl<R, W> ::std::ops::Deref for #fields<R, W> {
                type Target = #krate::Field<R, W>;

                fn deref(&self) -> &#krate::Field<R, W> {
                    &self.__this
                }
            }

            #[automatically_derived]
            impl<R> #fields<R, ::std::vec::Vec<#ident>> {
                /// The element the query matched (`$`), for updates.
                pub fn matched(&self) -> #fields<R, #ident> {
                    <#ident as #krate::Embedded>::fields_at(self.__this.matched().path())
                }

                /// Every element (`$[]`), for updates.
                pub fn all(&self) -> #fields<R, #ident> {
                    <#ident as #krate::Embedded>::fields_at(self.__this.all().path())
                }

                /// The elements the array filter `identifier` selects (`$[identifier]`).
                pub fn filtered(&self, identifier: &str) -> #fields<R, #ident> {
                    <#ident as #krate::Embedded>::fields_at(self.__this.filtered(identifier).path())
                }
            }

            #[automatically_derived]
            impl #krate::Embedded for #ident {
                type Fields<R, W> = #fields<R, W>;

                fn fields_at<R, W>(prefix: &str) -> #fields<R, W> {
                    #fields {
                        #(#initialisers,)*
                        __this: #krate::Field::new(prefix),
                    }
                }
            }
        };
    }
}

/// `Document::upgrade`: through the previous model and `From`, or through a function.
fn upgrade(c: &Container<'_>, krate: &syn::Path) -> TokenStream {
    if let Some(previous) = &c.from {
        return quote! {
            fn upgrade(
                stored: &#krate::__private::bson::RawDocument,
                _from: u32,
            ) -> ::std::result::Result<Self, ::std::string::String> {
                let previous: #previous = #krate::__private::decode_versioned(stored)?;
                ::std::result::Result::Ok(<Self as ::std::convert::From<#previous>>::from(previous))
            }
        };
    }
    if let Some(function) = &c.migrate {
        return quote! {
            fn upgrade(
                stored: &#krate::__private::bson::RawDocument,
                from: u32,
            ) -> ::std::result::Result<Self, ::std::string::String> {
                #krate::__private::migrate_with::<Self>(stored, from, #function)
            }
        };
    }
    TokenStream::new()
}

/// `__fields.a.b.path()`, each segment spanned at the path's token so that a missing field
/// inside an embedded type is reported there.
fn path_expr(key: &KeyDecl) -> TokenStream {
    let segments = key.path.iter().map(|s| field_ident(s, key.span));
    quote_spanned!(key.span=> __fields #(.#segments)*.path())
}

fn field_ident(name: &str, span: Span) -> syn::Ident {
    match syn::parse_str::<syn::Ident>(name) {
        Ok(mut ident) => {
            ident.set_span(span);
            ident
        }
        Err(_) => syn::Ident::new_raw(name, span),
    }
}

fn index_spec(krate: &syn::Path, index: &IndexDecl) -> TokenStream {
    let keys = index.keys.iter().map(|key| {
        let path = path_expr(key);
        let direction = if key.descending {
            quote!(#krate::__private::Direction::Descending)
        } else {
            quote!(#krate::__private::Direction::Ascending)
        };
        quote!((#path, #direction))
    });
    let mut spec = quote! {
        #krate::__private::IndexSpec::new([#(#keys),*])
            .expect("index paths are checked by #[derive(Document)]")
    };
    if index.unique {
        spec = quote!(#spec.unique());
    }
    if index.sparse {
        spec = quote!(#spec.sparse());
    }
    if let Some((seconds, _)) = &index.ttl {
        spec = quote!(#spec.expire_after(#krate::__private::Duration::from_secs(#seconds)));
    }
    if let Some(name) = &index.name {
        spec = quote!(#spec.named(#name));
    }
    if !index.partial.is_empty() {
        let conditions = index.partial.iter().map(|(key, value)| {
            let path = path_expr(key);
            quote!(__partial.insert(#path, #value);)
        });
        spec = quote! {
            #spec.partial({
                let mut __partial = #krate::__private::bson::Document::new();
                #(#conditions)*
                __partial
            })
            .expect("partial filters of equalities are valid")
        };
    }
    spec
}

fn shard_key(c: &Container<'_>, krate: &syn::Path) -> TokenStream {
    let Some(shard) = &c.shard_key else {
        return quote!(::std::option::Option::None);
    };
    let paths: Vec<TokenStream> = shard.keys.iter().map(path_expr).collect();
    let key = if shard.hashed {
        let path = &paths[0];
        quote!(#krate::__private::ShardKey::hashed(#path))
    } else {
        quote!(#krate::__private::ShardKey::range([#(#paths),*]))
    };
    quote! {
        let __fields = <Self as #krate::Document>::fields();
        #key.ok()
    }
}

/// `BookReview` -> `book_review`, the default collection name.
fn snake_case(name: &str) -> String {
    let mut out = String::new();
    for (i, ch) in name.chars().enumerate() {
        if ch.is_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.extend(ch.to_lowercase());
        } else {
            out.push(ch);
        }
    }
    out
}
