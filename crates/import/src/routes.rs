//! Who hears from an imported notification URL. changedetection.io notifies through a watch's
//! own URLs, else through those of its first group that has any, else through the global
//! ones; driftwatch routes an endpoint to tags and watches. Each distinct URL becomes one
//! endpoint routed to exactly the watches that used it: by tag where every watch of a group
//! did (so a watch added to the group later is routed too), by watch for the rest, and to
//! everything when every watch did.

use crate::{Notification, Route};

/// A group: its title, its watches (indexes) and its notification URLs.
pub(crate) struct Group<'a> {
    pub(crate) title: &'a str,
    pub(crate) members: Vec<usize>,
    pub(crate) urls: &'a [String],
}

/// The endpoints for `used[w]`, the URLs watch `w` notifies through.
pub(crate) fn notifications(used: &[Vec<String>], groups: &[Group<'_>]) -> Vec<Notification> {
    let mut urls: Vec<&String> = Vec::new();
    for url in used.iter().flatten() {
        if !urls.contains(&url) {
            urls.push(url);
        }
    }
    urls.into_iter()
        .map(|url| {
            let users: Vec<usize> = (0..used.len()).filter(|w| used[*w].contains(url)).collect();
            let route = if users.len() == used.len() {
                Route::Everything
            } else {
                let whole: Vec<&Group<'_>> = groups
                    .iter()
                    .filter(|g| g.urls.contains(url) && !g.members.is_empty())
                    .filter(|g| g.members.iter().all(|m| users.contains(m)))
                    .collect();
                let mut tags: Vec<String> = whole.iter().map(|g| g.title.to_owned()).collect();
                tags.dedup();
                let watches = users.into_iter().filter(|w| !whole.iter().any(|g| g.members.contains(w))).collect();
                Route::Some { tags, watches }
            };
            Notification { url: url.clone(), route }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_then_group_then_global_as_cd_resolves_them() {
        let (own, group, global) = ("mailto://own".to_owned(), "tgram://group".to_owned(), "ntfy://global".to_owned());
        // Watch 0 has its own URL; 1 and 2 are the group's; 3 falls back to the global one.
        let used = vec![vec![own.clone()], vec![group.clone()], vec![group.clone()], vec![global.clone()]];
        let urls = [group.clone()];
        let groups = [
            Group { title: "shops", members: vec![0, 1, 2], urls: &urls },
            Group { title: "pair", members: vec![1, 2], urls: &urls },
        ];
        let planned = notifications(&used, &groups);
        assert_eq!(planned.len(), 3);
        assert_eq!(planned[0].route, Route::Some { tags: vec![], watches: vec![0] });
        // "shops" also holds watch 0, which had its own URL: routed by the group that is whole.
        assert_eq!(planned[1].route, Route::Some { tags: vec!["pair".into()], watches: vec![] });
        assert_eq!(planned[2].route, Route::Some { tags: vec![], watches: vec![3] });
        let everyone = notifications(&[vec![global.clone()], vec![global]], &[]);
        assert_eq!(everyone[0].route, Route::Everything);
    }
}
