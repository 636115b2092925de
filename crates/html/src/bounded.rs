//! The DOM path's parse, bounded in depth: html5ever scans its stack of open elements for each
//! block start tag, so unbounded nesting is quadratic; past [`MAX_DEPTH`] the parse stops.

use std::borrow::Cow;
use std::cell::{Cell, Ref, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

use ego_tree::NodeId;
use html5ever::tendril::{StrTendril, TendrilSink};
use html5ever::tree_builder::{ElementFlags, NodeOrText, QuirksMode, TreeSink};
use html5ever::{Attribute, QualName};
use scraper::{Html, HtmlTreeSink};

use crate::{MAX_DEPTH, TooDeep};

/// [`Html::parse_document`], failing with [`TooDeep`] once an element is inserted deeper than
/// [`MAX_DEPTH`]. The input goes to html5ever in chunks, so that it stops soon after.
pub fn parse(body: &str) -> Result<Html, TooDeep> {
    const CHUNK: usize = 8 * 1024;
    let too_deep = Rc::new(Cell::new(false));
    let sink = DepthSink {
        inner: HtmlTreeSink::new(Html::new_document()),
        depths: RefCell::new(HashMap::new()),
        too_deep: Rc::clone(&too_deep),
    };
    let mut parser = html5ever::parse_document(sink, Default::default());
    let mut rest = body;
    while !rest.is_empty() {
        let mut end = rest.len().min(CHUNK);
        // html5ever drops a BOM at the start of every chunk it is given, not only the first.
        while !rest.is_char_boundary(end) || rest[end..].starts_with('\u{feff}') {
            end += 1;
        }
        parser.process(StrTendril::from_slice(&rest[..end]));
        rest = &rest[end..];
        if too_deep.get() {
            return Err(TooDeep);
        }
    }
    let document = parser.finish();
    if too_deep.get() { Err(TooDeep) } else { Ok(document) }
}

/// scraper's tree sink, noting when an element is inserted deeper than [`MAX_DEPTH`].
struct DepthSink {
    inner: HtmlTreeSink,
    /// The depth of each element when it was inserted (elements moved later by the adoption
    /// agency keep theirs).
    depths: RefCell<HashMap<NodeId, usize>>,
    too_deep: Rc<Cell<bool>>,
}

impl DepthSink {
    /// Notes the depth of `node` if it is an element just inserted (text is not counted).
    fn check(&self, node: Option<NodeId>) {
        let Some(id) = &node else { return };
        if self.too_deep.get() {
            return;
        }
        let html = self.inner.0.borrow();
        let Some(node) = html.tree.get(*id) else { return };
        if !node.value().is_element() {
            return;
        }
        let mut depths = self.depths.borrow_mut();
        let parent = match node.parent() {
            Some(parent) if parent.value().is_element() => depths.get(&parent.id()).copied().unwrap_or_else(|| {
                std::iter::successors(Some(parent), |n| n.parent())
                    .filter(|n| n.value().is_element())
                    .take(MAX_DEPTH + 1)
                    .count()
            }),
            _ => 0,
        };
        let depth = parent + 1;
        depths.insert(*id, depth);
        if depth > MAX_DEPTH {
            self.too_deep.set(true);
        }
    }
}

impl TreeSink for DepthSink {
    type Output = Html;
    type Handle = NodeId;
    type ElemName<'a> = Ref<'a, QualName>;

    fn finish(self) -> Html {
        self.inner.finish()
    }
    fn parse_error(&self, msg: Cow<'static, str>) {
        self.inner.parse_error(msg);
    }
    fn get_document(&self) -> NodeId {
        self.inner.get_document()
    }
    fn elem_name<'a>(&'a self, target: &'a NodeId) -> Ref<'a, QualName> {
        self.inner.elem_name(target)
    }
    fn create_element(&self, name: QualName, attrs: Vec<Attribute>, flags: ElementFlags) -> NodeId {
        self.inner.create_element(name, attrs, flags)
    }
    fn create_comment(&self, text: StrTendril) -> NodeId {
        self.inner.create_comment(text)
    }
    fn create_pi(&self, target: StrTendril, data: StrTendril) -> NodeId {
        self.inner.create_pi(target, data)
    }
    fn append(&self, parent: &NodeId, child: NodeOrText<NodeId>) {
        let node = node_of(&child);
        self.inner.append(parent, child);
        self.check(node);
    }
    fn append_based_on_parent_node(&self, element: &NodeId, prev_element: &NodeId, child: NodeOrText<NodeId>) {
        let node = node_of(&child);
        self.inner.append_based_on_parent_node(element, prev_element, child);
        self.check(node);
    }
    fn append_doctype_to_document(&self, name: StrTendril, public_id: StrTendril, system_id: StrTendril) {
        self.inner.append_doctype_to_document(name, public_id, system_id);
    }
    fn get_template_contents(&self, target: &NodeId) -> NodeId {
        self.inner.get_template_contents(target)
    }
    fn same_node(&self, x: &NodeId, y: &NodeId) -> bool {
        self.inner.same_node(x, y)
    }
    fn set_quirks_mode(&self, mode: QuirksMode) {
        self.inner.set_quirks_mode(mode);
    }
    fn append_before_sibling(&self, sibling: &NodeId, new_node: NodeOrText<NodeId>) {
        let node = node_of(&new_node);
        self.inner.append_before_sibling(sibling, new_node);
        self.check(node);
    }
    fn add_attrs_if_missing(&self, target: &NodeId, attrs: Vec<Attribute>) {
        self.inner.add_attrs_if_missing(target, attrs);
    }
    fn remove_from_parent(&self, target: &NodeId) {
        self.inner.remove_from_parent(target);
    }
    fn reparent_children(&self, node: &NodeId, new_parent: &NodeId) {
        self.inner.reparent_children(node, new_parent);
    }
}

/// The node being inserted, when it is one (not text).
fn node_of(child: &NodeOrText<NodeId>) -> Option<NodeId> {
    match child {
        NodeOrText::AppendNode(id) => Some(*id),
        NodeOrText::AppendText(_) => None,
    }
}
