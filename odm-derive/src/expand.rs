//! Generating the impls from a checked model.
//!
//! Generated code names everything through the odm crate's path (`::odm` unless
//! `#[odm(crate = "...")]`), sits in `const _: () = { ... }` apart from the handles struct,
//! and iterates only over ordered data, so the output is deterministic. Index paths are read
//! from the handles at run time (`fields.publisher.name.path()`), so serde renames inside
//! embedded types apply, and a misspelt field inside an embedded type is a compile error at the
//! path's token.
//!
//! Generic models and embedded types keep their parameters and bounds. An embedded field of a
//! parameter adds `M: Embedded`, one of a generic embedded type adds
//! `P: Serialize + DeserializeOwned` for its parameters: bounds on parameters only, since a
//! bound on `Envelope<M>` itself would hide the impl that names its handle type.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use crate::ast::{Container, IndexDecl, Kept, KeyDecl, KeyKind, Kind, RuleKind};
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
    let (impl_generics, type_generics, where_clause) = c.generics.split_for_impl();
    let root = quote!(#ident #type_generics);
    let (declarations, initialisers) = handles(c, krate, &root, &quote!(""));
    // The handles need each embedded type that depends on a parameter to be `Embedded`.
    let mut handle_bounds = where_clause
        .cloned()
        .unwrap_or_else(|| syn::parse_quote!(where));
    handle_bounds.predicates.extend(embedded_bounds(c, krate));
    // The trait's supertraits, for a generic model: serde's derives bound each parameter
    // themselves, so the model is `Serialize + DeserializeOwned` exactly when they hold.
    let mut bounds = handle_bounds.clone();
    if !c.generics.params.is_empty() {
        bounds.predicates.push(syn::parse_quote! {
            #root: #krate::__private::serde::Serialize
                + #krate::__private::serde::de::DeserializeOwned
                + 'static
        });
    }
    let collection = c
        .collection
        .as_ref()
        .map_or_else(|| snake_case(&ident.to_string()), |(name, _)| name.clone());
    let id_field = c
        .fields
        .iter()
        .find(|f| f.id.is_some())
        .map_or_else(|| "_id".to_owned(), |f| f.bson_name.clone());
    // The id field (checked: exactly one), for `Document::Id` and `document_id`.
    let (id_ident, id_type) = c.fields.iter().find(|f| f.id.is_some()).map_or_else(
        || (format_ident!("id"), quote!(())),
        |f| {
            (f.ident.clone(), {
                let ty = f.ty;
                quote!(#ty)
            })
        },
    );
    let indexes = c.all_indexes().map(|index| index_spec(krate, index));
    let shard_key = shard_key(c, krate);
    let version = c.version.map_or(0, |(n, _)| n);
    let upgrade = upgrade(c, krate);
    let kept = kept(c, krate);
    let declared_schema = c.schema.as_ref().map(|decl| {
        let object = schema_object(c, krate);
        let (level, action) = (&decl.level, &decl.action);
        let (body, _) = field_checks(c, krate);
        let checks = quote! {
            fn check_fields(&self) -> ::std::result::Result<(), #krate::SchemaProblem> {
                #body
            }
        };
        quote! {
            fn declared_schema() -> ::std::option::Option<#krate::DeclaredSchema> {
                ::std::option::Option::Some(#krate::__private::schema::declared(#object, #level, #action))
            }
            #checks
        }
    });
    let text_indexed = text_indexed(c, krate, &impl_generics, &root, &bounds);
    let has_text = c.all_indexes().any(|i| !i.text.is_empty());
    let doc = format!("Field handles of [`{ident}`], from `{ident}::fields()`.");
    quote! {
        #[doc = #doc]
        #[allow(dead_code)]
        #vis struct #fields #impl_generics #handle_bounds {
            #(#declarations,)*
        }

        #[allow(clippy::all, clippy::pedantic)]
        const _: () = {
            #[automatically_derived]
            impl #impl_generics #krate::Document for #root #bounds {
                type Fields = #fields #type_generics;
                type Id = #id_type;

                fn document_id(&self) -> &#id_type {
                    &self.#id_ident
                }
                const COLLECTION: &'static str = #collection;
                const ID_FIELD: &'static str = #id_field;
                const VERSION: u32 = #version;
                const HAS_TEXT_INDEX: bool = #has_text;

                fn fields() -> #fields #type_generics {
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

                #kept

                #declared_schema
            }

            #text_indexed
        };
    }
}

/// The `$jsonSchema` of the type's stored fields, as an expression: each field's type's
/// schema (`odm::Schema`, named at the type's tokens so that a type without one is an error
/// there) with its rules, required unless optional; a versioned model's `_v` too. Each rule
/// names the trait of the values it constrains at its token.
fn schema_object(c: &Container<'_>, krate: &syn::Path) -> TokenStream {
    let schema = quote!(#krate::__private::schema);
    let mut properties = Vec::new();
    let mut checks = Vec::new();
    for field in c.fields.iter().filter(|f| !f.skipped) {
        let ty = field.ty;
        let name = if field.id.is_some() {
            "_id".to_owned()
        } else {
            field.bson_name.clone()
        };
        let rules = field.rules.iter().map(|rule| {
            let (keyword, value) = (rule.keyword, &rule.value);
            quote!(#keyword: #value)
        });
        for rule in &field.rules {
            let check = match rule.kind {
                RuleKind::Text => format_ident!("text_rule"),
                RuleKind::Number => format_ident!("number_rule"),
                RuleKind::Array => format_ident!("array_rule"),
            };
            checks.push(quote_spanned!(rule.span=> #schema::#check::<#ty>();));
        }
        let of_type = quote_spanned!(ty.span()=> <#ty as #krate::Schema>);
        properties.push(quote! {
            (
                #name,
                #schema::with_rules(
                    #of_type::json_schema(),
                    #krate::__private::bson::doc! { #(#rules),* },
                ),
                #of_type::OPTIONAL,
            )
        });
    }
    if c.version.is_some() {
        properties.push(quote!(#schema::version_property()));
    }
    quote! {{
        #(#checks)*
        #schema::object(::std::vec![#(#properties),*])
    }}
}

/// A type's client-side checks (for a type with `#[odm(schema)]`, whose fields' types are
/// all `Schema`): the body that runs each field's `check` function, then the checks inside
/// each field's value when its type has any (a constant, so fields without checks cost
/// nothing); and whether the type has checks at all. A refusal is returned with the field's
/// stored name prepended to its path.
fn field_checks(c: &Container<'_>, krate: &syn::Path) -> (TokenStream, TokenStream) {
    let schema = quote!(#krate::__private::schema);
    let mut steps = Vec::new();
    let mut has = vec![quote!(false)];
    for field in c.fields.iter().filter(|f| !f.skipped) {
        let (ident, ty) = (field.ident, field.ty);
        let name = if field.id.is_some() {
            "_id"
        } else {
            field.bson_name.as_str()
        };
        // Spanned at the function's path: one of another signature is an error there.
        if let Some(check) = &field.check {
            let call = quote_spanned!(check.span()=> #schema::checked(#check(__value)));
            steps.push(quote! {
                let __value = &self.#ident;
                #call.map_err(|p| #schema::under(#name, p))?;
            });
            has.push(quote!(true));
        }
        steps.push(quote! {
            if <#ty as #krate::Schema>::HAS_CHECKS {
                <#ty as #krate::Schema>::check(&self.#ident).map_err(|p| #schema::under(#name, p))?;
            }
        });
        has.push(quote!(<#ty as #krate::Schema>::HAS_CHECKS));
    }
    (
        quote! { #(#steps)* ::std::result::Result::Ok(()) },
        quote!(#(#has)||*),
    )
}

/// The kept fields' names, the methods that read the revision and bring the value up to
/// what a write stored, and those handing the value to its hooks. Each field's type is named through `Timestamp` or `Revision` at the
/// type's tokens, so a field of another type is a compile error there.
fn kept(c: &Container<'_>, krate: &syn::Path) -> TokenStream {
    let name = |kept| {
        c.kept(kept).map_or_else(
            || quote!(::std::option::Option::None),
            |field| {
                let name = &field.bson_name;
                quote!(::std::option::Option::Some(#name))
            },
        )
    };
    let (created, updated, revision) = (
        name(Kept::CreatedAt),
        name(Kept::UpdatedAt),
        name(Kept::Revision),
    );
    let mut assignments = Vec::new();
    for (kept, slot) in [
        (Kept::CreatedAt, format_ident!("created_at")),
        (Kept::UpdatedAt, format_ident!("updated_at")),
    ] {
        if let Some(field) = c.kept(kept) {
            let (ident, ty) = (field.ident, field.ty);
            assignments.push(quote_spanned! {ty.span()=>
                if let ::std::option::Option::Some(date) = kept.#slot {
                    self.#ident = <#ty as #krate::Timestamp>::from_date(date);
                }
            });
        }
    }
    let read_revision = c.kept(Kept::Revision).map(|field| {
        let (ident, ty) = (field.ident, field.ty);
        assignments.push(quote_spanned! {ty.span()=>
            if let ::std::option::Option::Some(n) = kept.revision {
                self.#ident = <#ty as #krate::Revision>::from_revision(n);
            }
        });
        quote_spanned! {ty.span()=>
            fn revision(&self) -> i64 {
                <#ty as #krate::Revision>::revision(&self.#ident)
            }
        }
    });
    // Spanned at the `hooks` token: a model without an `impl Hooks` is an error there.
    let hooks = c.hooks.map(|span| {
        quote_spanned! {span=>
            fn hooks(&self) -> ::std::option::Option<&dyn #krate::Hooks> {
                ::std::option::Option::Some(self)
            }
            fn hooks_mut(&mut self) -> ::std::option::Option<&mut dyn #krate::Hooks> {
                ::std::option::Option::Some(self)
            }
        }
    });
    let keep = (!assignments.is_empty()).then(|| {
        quote! {
            fn keep(&mut self, kept: &#krate::__private::Kept) {
                #(#assignments)*
            }
        }
    });
    quote! {
        const CREATED_AT: ::std::option::Option<&'static str> = #created;
        const UPDATED_AT: ::std::option::Option<&'static str> = #updated;
        const REVISION: ::std::option::Option<&'static str> = #revision;
        #read_revision
        #keep
        #hooks
    }
}

/// What the handles of embedded fields need of the type parameters, as bounds: `M: Embedded`
/// for a field of the parameter itself (`Vec<M>`), and `P: Serialize + DeserializeOwned` for
/// each parameter `P` of a generic embedded type (`Vec<Envelope<M>>`), which is what that type's
/// derived `Embedded` impl asks of it through serde. Bounds on the parameters, never on
/// `Envelope<M>` itself: such a bound would hide the impl, and with it the handle type.
fn embedded_bounds(c: &Container<'_>, krate: &syn::Path) -> Vec<syn::WherePredicate> {
    let parameters: Vec<&syn::Ident> = c.generics.type_params().map(|p| &p.ident).collect();
    let mut embedded: Vec<&syn::Ident> = Vec::new();
    let mut serialized: Vec<&syn::Ident> = Vec::new();
    for field in c.fields.iter().filter(|f| f.embedded && !f.skipped) {
        let elem = element(field.ty);
        if let Some(parameter) = c.type_parameter(elem) {
            if !embedded.contains(&parameter) {
                embedded.push(parameter);
            }
            continue;
        }
        for parameter in &parameters {
            if mentions(quote!(#elem), parameter) && !serialized.contains(parameter) {
                serialized.push(parameter);
            }
        }
    }
    let embedded = embedded
        .into_iter()
        .map(|p| syn::parse_quote!(#p: #krate::Embedded));
    let serialized = serialized.into_iter().map(|p| {
        syn::parse_quote! {
            #p: #krate::__private::serde::Serialize + #krate::__private::serde::de::DeserializeOwned
        }
    });
    embedded.chain(serialized).collect()
}

/// Whether the tokens name `parameter`.
fn mentions(tokens: TokenStream, parameter: &syn::Ident) -> bool {
    tokens.into_iter().any(|token| match token {
        proc_macro2::TokenTree::Ident(ident) => ident == *parameter,
        proc_macro2::TokenTree::Group(group) => mentions(group.stream(), parameter),
        _ => false,
    })
}

/// The names of the handle type's own parameters (the model and the value type): `R` and `W`,
/// or `__R` and `__W` when the embedded type has parameters of those names.
fn handle_parameters(c: &Container<'_>) -> (syn::Ident, syn::Ident) {
    let taken = |name: &str| c.generics.type_params().any(|p| p.ident == name);
    if taken("R") || taken("W") {
        (format_ident!("__R"), format_ident!("__W"))
    } else {
        (format_ident!("R"), format_ident!("W"))
    }
}

/// The embedded type's generics with more type parameters appended.
fn with_parameters(generics: &syn::Generics, extra: &[&syn::Ident]) -> syn::Generics {
    let mut all = generics.clone();
    for ident in extra {
        all.params.push(syn::parse_quote!(#ident));
    }
    all
}

fn embedded(c: &Container<'_>, krate: &syn::Path) -> TokenStream {
    let ident = c.ident;
    let vis = c.vis;
    let fields = fields_ident(c);
    let (r, w) = handle_parameters(c);
    let (_, type_generics, where_clause) = c.generics.split_for_impl();
    let this = quote!(#ident #type_generics);
    // The user's parameters as arguments (`M, N`), ahead of the handle's own.
    let arguments: Vec<&syn::Ident> = c
        .generics
        .params
        .iter()
        .filter_map(|p| match p {
            syn::GenericParam::Type(t) => Some(&t.ident),
            syn::GenericParam::Const(k) => Some(&k.ident),
            syn::GenericParam::Lifetime(_) => None,
        })
        .collect();
    let handle = |rr: &dyn quote::ToTokens, ww: &dyn quote::ToTokens| quote!(#fields<#(#arguments,)* #rr, #ww>);
    let all = with_parameters(c.generics, &[&r, &w]);
    let (all_impl, _, all_where) = all.split_for_impl();
    let rooted = with_parameters(c.generics, &[&r]);
    let (rooted_impl, _, _) = rooted.split_for_impl();
    let (user_impl, _, _) = c.generics.split_for_impl();
    // The trait's supertraits, for a generic type (as for a generic model).
    let mut bounds = where_clause
        .cloned()
        .unwrap_or_else(|| syn::parse_quote!(where));
    bounds.predicates.extend(embedded_bounds(c, krate));
    if !c.generics.params.is_empty() {
        bounds.predicates.push(syn::parse_quote! {
            #this: #krate::__private::serde::Serialize
                + #krate::__private::serde::de::DeserializeOwned
        });
    }
    let mut struct_bounds = all_where
        .cloned()
        .unwrap_or_else(|| syn::parse_quote!(where));
    struct_bounds.predicates.extend(embedded_bounds(c, krate));
    let (declarations, initialisers) = handles(c, krate, &quote!(#r), &quote!(prefix));
    let doc = format!(
        "Field handles of [`{ident}`] inside a model `{r}`, for a field holding a `{w}` (`{ident}` or an array of them)."
    );
    let schema_impl = embedded_schema(c, krate);
    let handle_rw = handle(&r, &w);
    let handle_vec = handle(&r, &quote!(::std::vec::Vec<#this>));
    let handle_one = handle(&r, &this);
    quote! {
        #[doc = #doc]
        #[allow(dead_code)]
        #vis struct #fields #all_impl #struct_bounds {
            #(#declarations,)*
            __this: #krate::Field<#r, #w>,
            __type: ::std::marker::PhantomData<fn() -> #this>,
        }

        #[allow(clippy::all, clippy::pedantic)]
        const _: () = {
            #[automatically_derived]
            impl #all_impl #handle_rw #struct_bounds {
                /// The handle on the whole value (also reached through `Deref`).
                pub fn this(&self) -> #krate::Field<#r, #w> {
                    self.__this.clone()
                }
            }

            /// The handles act as the handle on the whole value: filters and updates of the
            /// whole subdocument or array (`reviews.push(..)`, `publisher.eq(..)`).
            #[automatically_derived]
            impl #all_impl ::std::ops::Deref for #handle_rw #struct_bounds {
                type Target = #krate::Field<#r, #w>;

                fn deref(&self) -> &#krate::Field<#r, #w> {
                    &self.__this
                }
            }

            #[automatically_derived]
            impl #rooted_impl #handle_vec #bounds {
                /// The element the query matched (`$`), for updates.
                pub fn matched(&self) -> #handle_one {
                    <#this as #krate::Embedded>::fields_at(self.__this.matched().path())
                }

                /// Every element (`$[]`), for updates.
                pub fn all(&self) -> #handle_one {
                    <#this as #krate::Embedded>::fields_at(self.__this.all().path())
                }

                /// The elements the array filter `identifier` selects (`$[identifier]`).
                pub fn filtered(&self, identifier: &str) -> #handle_one {
                    <#this as #krate::Embedded>::fields_at(self.__this.filtered(identifier).path())
                }
            }

            #schema_impl

            #[automatically_derived]
            impl #user_impl #krate::Embedded for #this #bounds {
                type Fields<#r, #w> = #handle_rw;

                fn fields_at<#r, #w>(prefix: &str) -> #handle_rw {
                    #fields {
                        #(#initialisers,)*
                        __this: #krate::Field::new(prefix),
                        __type: ::std::marker::PhantomData,
                    }
                }
            }
        };
    }
}

/// `Schema` for an embedded type that declares `#[odm(schema)]`.
fn embedded_schema(c: &Container<'_>, krate: &syn::Path) -> Option<TokenStream> {
    c.schema.as_ref()?;
    let ident = c.ident;
    let (user_impl, type_generics, where_clause) = c.generics.split_for_impl();
    let object = schema_object(c, krate);
    let (body, has_checks) = field_checks(c, krate);
    let checks = quote! {
        const HAS_CHECKS: bool = #has_checks;
        fn check(&self) -> ::std::result::Result<(), #krate::SchemaProblem> {
            #body
        }
    };
    Some(quote! {
        #[automatically_derived]
        impl #user_impl #krate::Schema for #ident #type_generics #where_clause {
            fn json_schema() -> #krate::__private::bson::Document {
                #object
            }
            #checks
        }
    })
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
    let handle = handle_expr(key);
    quote_spanned!(key.span=> #handle.path())
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
    let mut spec = if index.is_search() {
        search_index_spec(krate, index)
    } else {
        let keys = index.keys.iter().map(|key| {
            let path = path_expr(key);
            let direction = if key.kind == KeyKind::Descending {
                quote!(#krate::__private::Direction::Descending)
            } else {
                quote!(#krate::__private::Direction::Ascending)
            };
            quote!((#path, #direction))
        });
        quote! {
            #krate::__private::IndexSpec::new([#(#keys),*])
                .expect("index paths are checked by #[derive(Document)]")
        }
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

/// `impl TextIndexed` for a model with a text index: it may be searched by `odm::text`.
fn text_indexed(
    c: &Container<'_>,
    krate: &syn::Path,
    impl_generics: &impl quote::ToTokens,
    root: &impl quote::ToTokens,
    bounds: &impl quote::ToTokens,
) -> TokenStream {
    if !c.all_indexes().any(|i| !i.text.is_empty()) {
        return TokenStream::new();
    }
    quote! {
        #[automatically_derived]
        impl #impl_generics #krate::__private::TextIndexed for #root #bounds {}
    }
}

/// A text or geo index, written as MongoDB's index document (`key`, `weights`,
/// `default_language`, `language_override`) for the engine's one parser. Each field's handle
/// goes through a function whose bound names what the index needs (`text_key`: text,
/// `sphere_key`: a location, `flat_key`: a coordinate pair), spanned at the key.
fn search_index_spec(krate: &syn::Path, index: &IndexDecl) -> TokenStream {
    let private = quote!(#krate::__private);
    let keys = index.keys.iter().map(|key| {
        let handle = handle_expr(key);
        let (path, value) = match key.kind {
            KeyKind::Ascending => (quote!(#handle.path()), quote!(1)),
            KeyKind::Descending => (quote!(#handle.path()), quote!(-1)),
            KeyKind::Sphere => (
                quote_spanned!(key.span=> #private::sphere_key(&#handle)),
                quote!("2dsphere"),
            ),
            KeyKind::Flat => (
                quote_spanned!(key.span=> #private::flat_key(&#handle)),
                quote!("2d"),
            ),
        };
        quote!(__key.insert(#path, #value);)
    });
    let text = index.text.iter().map(|(key, weight)| {
        let handle = handle_expr(key);
        let path = quote_spanned!(key.span=> #private::text_key(&#handle));
        quote! {
            __key.insert(#path, "text");
            __weights.insert(#path, #weight);
        }
    });
    let mut options = Vec::new();
    if !index.text.is_empty() {
        options.push(quote!(__index.insert("weights", __weights);));
    }
    if let Some(language) = &index.language {
        options.push(quote! {
            __index.insert("default_language", #krate::Language::#language.name());
        });
    }
    if let Some(field) = &index.language_override {
        options.push(quote!(__index.insert("language_override", #field);));
    }
    quote! {{
        let mut __key = #private::bson::Document::new();
        let mut __weights = #private::bson::Document::new();
        #(#keys)*
        #(#text)*
        let mut __index = #private::bson::Document::new();
        __index.insert("key", __key);
        #(#options)*
        #private::IndexSpec::from_document(&__index)
            .expect("text and geo indexes are checked by #[derive(Document)]")
    }}
}

/// `__fields.a.b`, the handle of a key's field, spanned as [`path_expr`] spans it.
fn handle_expr(key: &KeyDecl) -> TokenStream {
    let segments = key.path.iter().map(|s| field_ident(s, key.span));
    quote_spanned!(key.span=> __fields #(.#segments)*)
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
