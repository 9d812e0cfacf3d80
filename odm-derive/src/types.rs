//! What the derive can tell from a field's type tokens alone.

/// The last path segment of a type and its generic arguments: `Option<Vec<T>>` -> `Option`.
fn last_segment(ty: &syn::Type) -> Option<&syn::PathSegment> {
    match ty {
        syn::Type::Path(p) if p.qself.is_none() => p.path.segments.last(),
        syn::Type::Group(g) => last_segment(&g.elem),
        syn::Type::Paren(p) => last_segment(&p.elem),
        _ => None,
    }
}

/// The single generic argument of `Wrapper<T>`.
fn single_argument(segment: &syn::PathSegment) -> Option<&syn::Type> {
    let syn::PathArguments::AngleBracketed(args) = &segment.arguments else {
        return None;
    };
    args.args.iter().find_map(|a| match a {
        syn::GenericArgument::Type(t) => Some(t),
        _ => None,
    })
}

/// `Option<T>` -> `T`; any other type unchanged.
fn without_option(ty: &syn::Type) -> &syn::Type {
    match last_segment(ty) {
        Some(s) if s.ident == "Option" => single_argument(s).unwrap_or(ty),
        _ => ty,
    }
}

/// Whether values of the type are BSON arrays: `Vec`, sets, arrays and slices (optional or not).
pub fn is_array(ty: &syn::Type) -> bool {
    let ty = without_option(ty);
    if matches!(ty, syn::Type::Array(_) | syn::Type::Slice(_)) {
        return true;
    }
    last_segment(ty).is_some_and(|s| {
        ["Vec", "VecDeque", "HashSet", "BTreeSet", "SmallVec"]
            .iter()
            .any(|name| s.ident == name)
    })
}

/// The element type of an array type, or the type inside `Option`, or the type itself: what an
/// embedded field's handles describe.
pub fn element(ty: &syn::Type) -> &syn::Type {
    let ty = without_option(ty);
    match ty {
        syn::Type::Array(a) => &a.elem,
        syn::Type::Slice(s) => &s.elem,
        _ => match last_segment(ty) {
            Some(s) if is_array(ty) => single_argument(s).unwrap_or(ty),
            _ => ty,
        },
    }
}

/// Whether the type holds dates (a TTL index needs one): `DateTime` or `SystemTime`, possibly
/// optional or in an array.
pub fn is_date(ty: &syn::Type) -> bool {
    last_segment(element(ty)).is_some_and(|s| s.ident == "DateTime" || s.ident == "SystemTime")
}
