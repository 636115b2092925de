//! Selector matching against the open-element stack, through the same `selectors` engine and
//! the same parser scraper uses, so a selector means exactly what it means on the DOM.
//! Only selectors that look at an element, its attributes and its ancestors are accepted:
//! siblings, children and `:has()` are not known while streaming.

use scraper::selector::{CssLocalName, CssString, NonTSPseudoClass, Parser, PseudoElement, Simple};
use selectors::OpaqueElement;
use selectors::attr::{AttrSelectorOperation, CaseSensitivity, NamespaceConstraint};
use selectors::bloom::BloomFilter;
use selectors::matching::{
    self, ElementSelectorFlags, MatchingContext, MatchingForInvalidation, MatchingMode, NeedsSelectorFlags, QuirksMode,
    SelectorCaches,
};
use selectors::parser::{Combinator, Component, ParseRelative, SelectorList};

use driftwatch_html::Element;

const HTML_NAMESPACE: &str = "http://www.w3.org/1999/xhtml";

/// A parsed selector list, or `None` when it does not parse (scraper's parser then words the
/// error).
pub(super) fn parse(selector: &str) -> Option<SelectorList<Simple>> {
    SelectorList::parse(&Parser, &mut cssparser::Parser::new(selector), ParseRelative::No).ok()
}

/// Whether every part of `list` can be decided from an element and its ancestors.
pub(super) fn streamable(list: &SelectorList<Simple>) -> bool {
    list.slice().iter().all(|selector| {
        selector.iter_raw_match_order().all(|component| match component {
            Component::LocalName(_)
            | Component::ID(_)
            | Component::Class(_)
            | Component::AttributeInNoNamespaceExists { .. }
            | Component::AttributeInNoNamespace { .. }
            | Component::AttributeOther(_)
            | Component::ExplicitUniversalType
            | Component::ExplicitAnyNamespace
            | Component::ExplicitNoNamespace
            | Component::DefaultNamespace(_)
            | Component::Namespace(..)
            | Component::Root
            | Component::Combinator(Combinator::Child | Combinator::Descendant) => true,
            Component::Negation(inner) | Component::Is(inner) | Component::Where(inner) => streamable(inner),
            _ => false,
        })
    })
}

/// Matches selectors against stack elements, reusing the engine's caches.
#[derive(Default)]
pub(super) struct Matcher {
    caches: SelectorCaches,
}

impl Matcher {
    /// Whether the element at `index` of `stack` matches `list`, as seen by the DOM path once
    /// the first `detached_by` remove selectors have detached their matches.
    pub(super) fn matches(
        &mut self,
        list: &SelectorList<Simple>,
        stack: &[Element<'_>],
        index: usize,
        detached_by: usize,
    ) -> bool {
        let candidate = Candidate { stack, index, detached_by };
        let mut context = MatchingContext::new(
            MatchingMode::Normal,
            None,
            &mut self.caches,
            QuirksMode::NoQuirks,
            NeedsSelectorFlags::No,
            MatchingForInvalidation::No,
        );
        list.slice().iter().any(|s| matching::matches_selector(s, 0, None, &candidate, &mut context))
    }
}

/// An element of the stack; its ancestors are the elements below it, up to the first one a
/// remove selector before `detached_by` has detached (which then has no parent), as in the
/// DOM after those removals.
#[derive(Debug, Clone, Copy)]
struct Candidate<'a, 's> {
    stack: &'a [Element<'s>],
    index: usize,
    detached_by: usize,
}

impl Candidate<'_, '_> {
    fn element(&self) -> &Element<'_> {
        &self.stack[self.index]
    }

    fn detached(&self) -> bool {
        self.element().removed_by.is_some_and(|k| k < self.detached_by)
    }
}

/// Mirrors scraper's `impl Element for ElementRef` for an HTML element.
impl selectors::Element for Candidate<'_, '_> {
    type Impl = Simple;

    fn opaque(&self) -> OpaqueElement {
        OpaqueElement::new(self.element())
    }

    fn parent_element(&self) -> Option<Self> {
        (self.index > 0 && !self.detached()).then(|| Self { index: self.index - 1, ..*self })
    }

    fn parent_node_is_shadow_root(&self) -> bool {
        false
    }

    fn containing_shadow_host(&self) -> Option<Self> {
        None
    }

    fn is_pseudo_element(&self) -> bool {
        false
    }

    // Sibling and child relations are refused by `streamable`.
    fn prev_sibling_element(&self) -> Option<Self> {
        None
    }

    fn next_sibling_element(&self) -> Option<Self> {
        None
    }

    fn first_element_child(&self) -> Option<Self> {
        None
    }

    fn is_html_element_in_html_document(&self) -> bool {
        true
    }

    fn has_local_name(&self, name: &CssLocalName) -> bool {
        *name.0 == *self.element().name
    }

    fn has_namespace(&self, namespace: &html5ever::Namespace) -> bool {
        **namespace == *HTML_NAMESPACE
    }

    fn is_same_type(&self, other: &Self) -> bool {
        self.element().name == other.element().name
    }

    fn attr_matches(
        &self,
        ns: &NamespaceConstraint<&html5ever::Namespace>,
        local_name: &CssLocalName,
        operation: &AttrSelectorOperation<&CssString>,
    ) -> bool {
        // Attributes of HTML elements are in no namespace.
        !matches!(*ns, NamespaceConstraint::Specific(url) if !url.is_empty())
            && self.element().attrs.iter().any(|(key, value)| *local_name.0 == **key && operation.eval_str(value))
    }

    fn match_non_ts_pseudo_class(&self, _pc: &NonTSPseudoClass, _context: &mut MatchingContext<'_, Simple>) -> bool {
        false
    }

    fn match_pseudo_element(&self, _pe: &PseudoElement, _context: &mut MatchingContext<'_, Simple>) -> bool {
        false
    }

    fn apply_selector_flags(&self, _flags: ElementSelectorFlags) {}

    fn is_link(&self) -> bool {
        self.element().name == "link"
    }

    fn is_html_slot_element(&self) -> bool {
        true
    }

    fn has_id(&self, id: &CssLocalName, case_sensitivity: CaseSensitivity) -> bool {
        self.element().attr("id").is_some_and(|value| case_sensitivity.eq(id.0.as_bytes(), value.as_bytes()))
    }

    fn has_class(&self, name: &CssLocalName, case_sensitivity: CaseSensitivity) -> bool {
        self.element().attr("class").is_some_and(|value| {
            value.split_ascii_whitespace().any(|class| case_sensitivity.eq(class.as_bytes(), name.0.as_bytes()))
        })
    }

    fn has_custom_state(&self, _name: &CssLocalName) -> bool {
        false
    }

    fn imported_part(&self, _name: &CssLocalName) -> Option<CssLocalName> {
        None
    }

    fn is_part(&self, _name: &CssLocalName) -> bool {
        false
    }

    // `:empty` is refused by `streamable`.
    fn is_empty(&self) -> bool {
        false
    }

    fn is_root(&self) -> bool {
        self.index == 0 && !self.detached()
    }

    fn add_element_unique_hashes(&self, _filter: &mut BloomFilter) -> bool {
        false
    }
}
