#![allow(clippy::unwrap_used)]

use super::{MAX_OFFERS, Offer, first_offer, offers};

fn offer(name: Option<&str>, price: Option<&str>, currency: Option<&str>, availability: Option<&str>) -> Offer {
    Offer {
        name: name.map(str::to_owned),
        price: price.map(str::to_owned),
        currency: currency.map(str::to_owned),
        availability: availability.map(str::to_owned),
    }
}

fn ld(json: &str) -> String {
    format!(
        "<!doctype html><html><head><title>Shop</title>\n<script type=\"application/ld+json\">{json}</script>\n</head><body><p>Hi</p></body></html>"
    )
}

const SHOPIFY: &str = r#"<!doctype html>
<html lang="en" class="no-js">
<head>
  <meta charset="utf-8">
  <title>Trail Runner 2 &ndash; Example Outfitters</title>
  <script>window.ShopifyAnalytics = window.ShopifyAnalytics || {}; if (a < b && c > d) {}</script>
  <script type="application/ld+json">
  {
    "@context": "https://schema.org",
    "@type": "Organization",
    "name": "Example Outfitters",
    "sameAs": ["https://instagram.com/example"],
    "url": "https://shop.example"
  }
  </script>
  <script type="application/ld+json">
  {
    "@context": "http://schema.org/",
    "@type": "Product",
    "name": "Trail Runner 2",
    "url": "https://shop.example/products/trail-runner-2",
    "image": ["https://cdn.shopify.com/s/files/1/0001/products/trail.jpg?v=1"],
    "description": "A light trail shoe.",
    "sku": "TR2-42",
    "brand": {"@type": "Brand", "name": "Example"},
    "offers": [
      {
        "@type" : "Offer",
        "sku": "TR2-42",
        "availability" : "http://schema.org/InStock",
        "price" : 129.95,
        "priceCurrency" : "EUR",
        "url" : "https://shop.example/products/trail-runner-2?variant=40001"
      },
      {
        "@type" : "Offer",
        "sku": "TR2-43",
        "availability" : "http://schema.org/OutOfStock",
        "price" : 134.5,
        "priceCurrency" : "EUR",
        "url" : "https://shop.example/products/trail-runner-2?variant=40002"
      }
    ]
  }
  </script>
</head>
<body><div class="product"><h1>Trail Runner 2</h1><span class="price">€129,95</span></div></body>
</html>"#;

#[test]
fn shopify_product_with_two_variant_offers() {
    assert_eq!(
        offers(SHOPIFY),
        vec![
            offer(Some("Trail Runner 2"), Some("129.95"), Some("EUR"), Some("http://schema.org/InStock")),
            offer(Some("Trail Runner 2"), Some("134.5"), Some("EUR"), Some("http://schema.org/OutOfStock")),
        ]
    );
    assert_eq!(first_offer(SHOPIFY).unwrap().price.as_deref(), Some("129.95"));
}

const WOOCOMMERCE: &str = r#"<!DOCTYPE html>
<html lang="de-DE">
<head>
<meta charset="UTF-8">
<title>Kapuzenpullover &#8211; Beispielshop</title>
<script type="application/ld+json" class="yoast-schema-graph">{"@context":"https://schema.org","@graph":[{"@type":"WebPage","@id":"https://shop.example/produkt/hoodie/","url":"https://shop.example/produkt/hoodie/","name":"Kapuzenpullover - Beispielshop","isPartOf":{"@id":"https://shop.example/#website"},"breadcrumb":{"@id":"https://shop.example/produkt/hoodie/#breadcrumb"}},{"@type":"BreadcrumbList","@id":"https://shop.example/produkt/hoodie/#breadcrumb","itemListElement":[{"@type":"ListItem","position":1,"name":"Startseite","item":"https://shop.example/"},{"@type":"ListItem","position":2,"name":"Kapuzenpullover"}]},{"@type":"WebSite","@id":"https://shop.example/#website","url":"https://shop.example/","name":"Beispielshop"}]}</script>
</head>
<body class="product-template-default single single-product">
<div id="product-42" class="product type-product">
  <h1 class="product_title entry-title">Kapuzenpullover</h1>
  <p class="price"><span class="woocommerce-Price-amount amount"><bdi>45,00&nbsp;<span class="woocommerce-Price-currencySymbol">&euro;</span></bdi></span></p>
</div>
<script type="application/ld+json">{"@context":"https:\/\/schema.org\/","@graph":[{"@context":"https:\/\/schema.org\/","@type":"BreadcrumbList","itemListElement":[{"@type":"ListItem","position":1,"item":{"name":"Startseite","@id":"https:\/\/shop.example"}},{"@type":"ListItem","position":2,"item":{"name":"Kapuzenpullover","@id":"https:\/\/shop.example\/produkt\/hoodie\/"}}]},{"@context":"https:\/\/schema.org\/","@type":"Product","@id":"https:\/\/shop.example\/produkt\/hoodie\/#product","name":"Kapuzenpullover","url":"https:\/\/shop.example\/produkt\/hoodie\/","description":"Warm.","image":"https:\/\/shop.example\/wp-content\/uploads\/hoodie.jpg","sku":42,"offers":[{"@type":"Offer","price":"45.00","priceValidUntil":"2027-12-31","priceSpecification":{"price":"45.00","priceCurrency":"EUR","valueAddedTaxIncluded":"true"},"priceCurrency":"EUR","availability":"http:\/\/schema.org\/InStock","url":"https:\/\/shop.example\/produkt\/hoodie\/","seller":{"@type":"Organization","name":"Beispielshop","url":"https:\/\/shop.example"}}]}]}</script>
</body>
</html>"#;

#[test]
fn woocommerce_graph() {
    assert_eq!(
        offers(WOOCOMMERCE),
        vec![offer(Some("Kapuzenpullover"), Some("45.00"), Some("EUR"), Some("http://schema.org/InStock"))]
    );
}

#[test]
fn aggregate_offer_reads_low_price() {
    let page = ld(r#"{"@context":"https://schema.org/","@type":"Product","name":"Hoodie (variable)",
        "offers":[{"@type":"AggregateOffer","lowPrice":"20.00","highPrice":"35.00","offerCount":3,
        "priceCurrency":"EUR","availability":"https://schema.org/InStock"}]}"#);
    assert_eq!(
        offers(&page),
        vec![offer(Some("Hoodie (variable)"), Some("20.00"), Some("EUR"), Some("https://schema.org/InStock"))]
    );
}

#[test]
fn aggregate_offer_nested_offers() {
    // With a price: the aggregate, then its offers (taking its currency when they state none).
    let page = ld(r#"{"@type":"Product","name":"Camera","offers":{"@type":"AggregateOffer","lowPrice":399,
        "highPrice":450,"priceCurrency":"USD","offers":[
          {"@type":"Offer","price":399,"availability":"https://schema.org/InStock"},
          {"@type":"Offer","price":"450.00","priceCurrency":"CAD"}]}}"#);
    assert_eq!(
        offers(&page),
        vec![
            offer(Some("Camera"), Some("399"), Some("USD"), None),
            offer(Some("Camera"), Some("399"), Some("USD"), Some("https://schema.org/InStock")),
            offer(Some("Camera"), Some("450.00"), Some("CAD"), None),
        ]
    );
    // Without one: its offers alone.
    let page = ld(r#"{"@type":"Product","name":"Camera","offers":{"@type":"AggregateOffer","priceCurrency":"USD",
        "offers":[{"@type":"Offer","price":"410"}]}}"#);
    assert_eq!(offers(&page), vec![offer(Some("Camera"), Some("410"), Some("USD"), None)]);
}

#[test]
fn price_as_number_and_as_localised_string() {
    let page = ld(r#"{"@type":"Product","name":"TV","offers":{"@type":"Offer","price":1299,"priceCurrency":"EUR"}}"#);
    assert_eq!(first_offer(&page).unwrap().price.as_deref(), Some("1299"));
    let page = ld(r#"{"@type":"Product","name":"TV","offers":{"@type":"Offer","price":1299.0}}"#);
    assert_eq!(first_offer(&page).unwrap().price.as_deref(), Some("1299"));
    let page = ld(r#"{"@type":"Product","name":"TV","offers":{"@type":"Offer","price":12.5}}"#);
    assert_eq!(first_offer(&page).unwrap().price.as_deref(), Some("12.5"));
    let page =
        ld(r#"{"@type":"Product","name":"TV","offers":{"@type":"Offer","price":"1.299,00","priceCurrency":"EUR"}}"#);
    assert_eq!(first_offer(&page), Some(offer(Some("TV"), Some("1.299,00"), Some("EUR"), None)));
}

#[test]
fn price_specification_only() {
    let page = ld(r#"{"@context":"https://schema.org","@type":"Product","name":"Kettle","offers":{"@type":"Offer",
        "availability":{"@id":"https://schema.org/InStock"},
        "priceSpecification":[
          {"@type":"UnitPriceSpecification","priceType":"https://schema.org/ListPrice","price":"59.99","priceCurrency":"GBP"},
          {"@type":"UnitPriceSpecification","price":"4.99","priceCurrency":"GBP","referenceQuantity":{"@type":"QuantitativeValue","value":"1","unitCode":"LTR"}},
          {"@type":"UnitPriceSpecification","price":"49.99","priceCurrency":"GBP"}
        ]}}"#);
    assert_eq!(
        offers(&page),
        vec![offer(Some("Kettle"), Some("49.99"), Some("GBP"), Some("https://schema.org/InStock"))]
    );
    let page = ld(r#"{"@type":"Product","name":"Kettle","offers":{"@type":"Offer",
        "priceSpecification":{"@type":"PriceSpecification","price":39,"priceCurrency":"EUR"}}}"#);
    assert_eq!(offers(&page), vec![offer(Some("Kettle"), Some("39"), Some("EUR"), None)]);
}

#[test]
fn types_arrays_prefixes_and_urls() {
    for ty in [r#""Product""#, r#"["Thing","Product"]"#, r#""schema:Product""#, r#""http://schema.org/Product""#] {
        let page = ld(&format!(r#"{{"@type":{ty},"name":"Lamp","offers":{{"@type":"Offer","price":"10"}}}}"#));
        assert_eq!(offers(&page), vec![offer(Some("Lamp"), Some("10"), None, None)], "{ty}");
    }
    let page = ld(r#"[{"@type":"WebSite","name":"Shop"},{"@type":"Product","name":"Lamp","offers":{"price":"10"}}]"#);
    assert_eq!(offers(&page), vec![offer(Some("Lamp"), Some("10"), None, None)]);
}

#[test]
fn product_group_variants_and_references() {
    let page = ld(r##"{"@context":"https://schema.org","@graph":[
        {"@type":"ProductGroup","@id":"#group","name":"Wool Sweater","hasVariant":[{"@id":"#small"},
          {"@type":"Product","name":"Wool Sweater (L)","offers":{"@type":"Offer","price":"69.00","priceCurrency":"EUR"}}]},
        {"@type":"Product","@id":"#small","offers":{"@type":"Offer","@id":"#small-offer"}},
        {"@type":"Offer","@id":"#small-offer","price":"59.00","priceCurrency":"EUR","availability":"https://schema.org/InStock"}
    ]}"##);
    assert_eq!(
        offers(&page),
        vec![
            offer(Some("Wool Sweater"), Some("59.00"), Some("EUR"), Some("https://schema.org/InStock")),
            offer(Some("Wool Sweater (L)"), Some("69.00"), Some("EUR"), None),
        ]
    );
}

#[test]
fn lone_offers_and_products_without_offers() {
    let page = ld(r#"{"@type":"Offer","price":"5","itemOffered":{"@type":"Product","name":"Pen"}}"#);
    assert_eq!(offers(&page), vec![offer(Some("Pen"), Some("5"), None, None)]);
    let page = ld(r#"{"@type":"Product","name":"Pen"}"#);
    assert_eq!(offers(&page), vec![offer(Some("Pen"), None, None, None)]);
    // A related product is not this product's offer.
    let page =
        ld(r#"{"@type":"Product","name":"Pen","isRelatedTo":{"@type":"Product","name":"Ink","offers":{"price":"2"}}}"#);
    assert_eq!(offers(&page), vec![offer(Some("Pen"), None, None, None)]);
}

#[test]
fn first_offer_prefers_one_with_a_price() {
    let page = ld(r#"[{"@type":"Product","name":"Ad"},{"@type":"Product","name":"Desk","offers":{"price":"300"}}]"#);
    assert_eq!(first_offer(&page).unwrap().name.as_deref(), Some("Desk"));
    let page = ld(r#"{"@type":"Product","name":"Ad"}"#);
    assert_eq!(first_offer(&page).unwrap().name.as_deref(), Some("Ad"));
}

#[test]
fn script_wrappers_type_attribute_and_control_characters() {
    let json = r#"{"@type":"Product","name":"Mug","offers":{"price":"8"}}"#;
    for body in [
        format!("<!--\n{json}\n-->"),
        format!("//<![CDATA[\n{json}\n//]]>"),
        format!("/*<![CDATA[*/{json}/*]]>*/"),
        format!("<![CDATA[{json}]]>"),
        format!("\u{feff}  {json}  "),
    ] {
        let page =
            format!("<html><head><script type='Application/LD+JSON; charset=utf-8'>{body}</script></head></html>");
        assert_eq!(offers(&page), vec![offer(Some("Mug"), Some("8"), None, None)], "{body}");
    }
    let raw = "<script type=application/ld+json>{\"@type\":\"Product\",\"name\":\"Mug\tBlue\",\"description\":\"Line\nbreak\",\"offers\":{\"price\":\"8\"}}</script>";
    assert_eq!(offers(raw), vec![offer(Some("Mug\tBlue"), Some("8"), None, None)]);
    // Not JSON-LD: another type, a script in a comment, in an attribute, or as noscript text.
    let hidden = format!(
        "<script type=\"application/json\">{json}</script><!-- <script type=\"application/ld+json\">{json}</script> -->\
         <div title='<script type=\"application/ld+json\">{json}</script>'></div><noscript><script type=\"application/ld+json\">{json}</script></noscript>"
    );
    assert_eq!(offers(&hidden), vec![]);
}

#[test]
fn script_text_ends_at_its_own_end_tag() {
    // An escaped `<script>` inside the text does not end it; a `</script>` in a JSON string does.
    let page = r#"<script type="application/ld+json"><!-- {"@type":"Product","name":"A <script>x</script> B","offers":{"price":"1"}} --></script>
<script type="application/ld+json">{"@type":"Product","name":"C","offers":{"price":"2"}}</script>"#;
    assert_eq!(
        offers(page),
        vec![offer(Some("A <script>x</script> B"), Some("1"), None, None), offer(Some("C"), Some("2"), None, None)]
    );
}

#[test]
fn broken_json_ld_is_skipped() {
    let page = r#"<html><head>
<script type="application/ld+json">{"@type":"Product","name":"Broken","offers":{"price":"1",},}</script>
<script type="application/ld+json">{"@type":"Product", "name": </script>
<script type="application/ld+json"></script>
<script type="application/ld+json">{"@type":"Product","name":"Good","offers":{"@type":"Offer","price":"2.50","priceCurrency":"USD"}}</script>
</head></html>"#;
    assert_eq!(offers(page), vec![offer(Some("Good"), Some("2.50"), Some("USD"), None)]);
}

#[test]
fn depth_bombs_do_not_overflow() {
    let arrays = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let objects = format!("{}{}", r#"{"a":"#.repeat(10_000), "}".repeat(10_000));
    let products = format!("{}{}", r#"{"@type":"Product","name":"P","hasVariant":"#.repeat(10_000), "}".repeat(10_000));
    let wrapped_100 = format!(
        r#"{}{{"@type":"Product","name":"Deep","offers":{{"price":"1"}}}}{}"#,
        "[".repeat(100),
        "]".repeat(100)
    );
    let page = format!(
        "{}{}{}{}<script type=\"application/ld+json\">{{\"@type\":\"Product\",\"name\":\"Fine\"}}</script>",
        ld(&arrays),
        ld(&objects),
        ld(&products),
        ld(&wrapped_100)
    );
    assert_eq!(offers(&page), vec![offer(Some("Fine"), None, None, None)]);

    // A valid chain of variants nested 100 deep: read to the depth limit, no further.
    let chain = format!(
        r#"{}{{"@type":"Product","name":"Leaf","offers":{{"price":"1"}}}}{}"#,
        r#"{"@type":"ProductGroup","name":"G","hasVariant":"#.repeat(100),
        "}".repeat(100)
    );
    assert_eq!(offers(&ld(&chain)), vec![offer(Some("G"), None, None, None)]);

    // Deeply nested HTML with microdata is not parsed into a DOM (html5ever is quadratic in it).
    let deep = format!(
        "<div itemscope itemtype=\"https://schema.org/Product\"><span itemprop=name>X</span>{}</div>",
        "<div>".repeat(200_000)
    );
    assert_eq!(offers(&deep), vec![]);
    let deep = format!(
        "{}<div itemscope itemtype=\"https://schema.org/Product\"><span itemprop=name>X</span>{}</div>",
        "<div><b id=x1>x</div>".repeat(20_000),
        "<p>x".repeat(20_000)
    );
    // Formatting elements reopened before every paragraph, but alike ones (html5ever keeps
    // three of a kind): parsed, and the product read.
    assert_eq!(offers(&deep), vec![offer(Some("X"), None, None, None)]);
    // JSON-LD before a nest too deep for the DOM is still read; microdata after it is not.
    let deep = format!(
        "{}<div>{}<div itemscope itemtype=\"https://schema.org/Offer\"><span itemprop=price>3</span></div>",
        ld(r#"{"@type":"Product","name":"Head","offers":{"price":"2"}}"#),
        "<div>".repeat(5_000)
    );
    assert_eq!(offers(&deep), vec![offer(Some("Head"), Some("2"), None, None)]);
}

#[test]
fn many_offers_are_capped() {
    let items = (0..500).map(|i| format!(r#"{{"@type":"Offer","price":"{i}"}}"#)).collect::<Vec<_>>().join(",");
    let page = ld(&format!(r#"{{"@type":"Product","name":"Many","offers":[{items}]}}"#));
    let all = offers(&page);
    assert_eq!(all.len(), MAX_OFFERS);
    assert_eq!(all[99].price.as_deref(), Some("99"));
}

const MICRODATA: &str = r#"<!DOCTYPE html>
<html><head><title>Espresso Machine X1</title></head>
<body>
<nav itemscope itemtype="https://schema.org/BreadcrumbList">
  <span itemprop="itemListElement" itemscope itemtype="https://schema.org/ListItem"><a itemprop="item" href="/"><span itemprop="name">Home</span></a></span>
</nav>
<div class="product" itemscope itemtype="http://schema.org/Product/">
  <h1 class="title" itemprop="name">
      Espresso   Machine
      X1
  </h1>
  <img itemprop="image" src="/img/x1.jpg" alt="">
  <div itemprop="brand" itemscope itemtype="https://schema.org/Brand"><span itemprop="name">Brewco</span></div>
  <div itemprop="offers" itemscope itemtype="https://schema.org/Offer">
    <span class="price" itemprop="price" content="1299.00">€ 1.299,00</span>
    <meta itemprop="priceCurrency" content="EUR">
    <link itemprop="availability" href="https://schema.org/InStock">
    <span itemprop="seller" itemscope itemtype="https://schema.org/Organization"><span itemprop="name">Shop GmbH</span></span>
  </div>
  <div itemprop="review" itemscope itemtype="https://schema.org/Review">
    <span itemprop="name">Great machine</span>
    <div itemprop="reviewRating" itemscope itemtype="https://schema.org/Rating"><meta itemprop="price" content="5"></div>
  </div>
</div>
</body></html>"#;

#[test]
fn microdata_only() {
    assert_eq!(
        offers(MICRODATA),
        vec![offer(Some("Espresso Machine X1"), Some("1299.00"), Some("EUR"), Some("https://schema.org/InStock"))]
    );
}

#[test]
fn microdata_out_of_stock_text_price_and_lone_offer() {
    let page = r#"<html><body>
<article itemscope itemtype="https://schema.org/Product">
  <h2 itemprop="name">Grinder &amp; Co</h2>
  <p itemprop="offers" itemscope itemtype="https://schema.org/AggregateOffer">
    From <span itemprop="lowPrice">€&nbsp;89,00</span> <span itemprop="priceCurrency">EUR</span>
    <link itemprop="availability" href="https://schema.org/OutOfStock">Sold out
  </p>
</article>
<div itemscope itemtype="https://schema.org/Offer">
  <data itemprop="price" value="4.50">4,50 €</data>
  <time itemprop="availabilityEnds" datetime="2030-01-01">New year</time>
</div>
<div itemscope itemtype="https://example.org/Product"><span itemprop="name">Elsewhere</span></div>
</body></html>"#;
    assert_eq!(
        offers(page),
        vec![
            offer(Some("Grinder & Co"), Some("€\u{a0}89,00"), Some("EUR"), Some("https://schema.org/OutOfStock")),
            offer(None, Some("4.50"), None, None),
        ]
    );
}

#[test]
fn json_ld_comes_before_microdata() {
    let page = MICRODATA.replace(
        "</head>",
        r#"<script type="application/ld+json">{"@type":"Product","name":"From JSON-LD","offers":{"price":"1250.00","priceCurrency":"EUR"}}</script></head>"#,
    );
    let all = offers(&page);
    assert_eq!(all.len(), 2);
    assert_eq!(all[0].name.as_deref(), Some("From JSON-LD"));
    assert_eq!(all[1].name.as_deref(), Some("Espresso Machine X1"));
    assert_eq!(first_offer(&page).unwrap().price.as_deref(), Some("1250.00"));
}

#[test]
fn no_structured_data() {
    let page = "<!doctype html><html><head><title>Plain</title><script>var x = '<script type=\"application/ld+json\">';</script></head><body><p>Price: €10</p></body></html>";
    assert_eq!(offers(page), vec![]);
    assert_eq!(first_offer(page), None);
    assert_eq!(offers(""), vec![]);
    assert_eq!(first_offer("<"), None);
}

#[test]
fn odd_input_does_not_panic() {
    for page in [
        "<script type=\"application/ld+json\">",
        "<script type=\"application/ld+json\">{\"@type\":\"Product\"",
        "<script type=\"application/ld+json",
        "<div itemscope itemtype='https://schema.org/Product'><span itemprop=name>é",
        "<!--",
        "<!-->",
        "</",
        "<a b='",
        "<svg><script type=\"application/ld+json\">{}</script></svg>",
        "<table><tr><td><svg><tr><td><math><mi><div itemscope itemtype=https://schema.org/Offer>",
        "\u{0}<\u{0}>\u{feff}<\u{feff}",
        "<script type=application/ld+json>[1,\"é\",{\"@type\":[\"Product\",1,null]},{\"offers\":\"x\"}]</script>",
        "<script type=application/ld+json>{\"@type\":\"Product\",\"offers\":[null,1,\"a\",[[{\"price\":true}]]]}</script>",
    ] {
        let _ = offers(page);
        let _ = first_offer(page);
    }
}

#[test]
fn depth_estimate_follows_real_pages() {
    // Many sibling elements, unclosed list items and paragraphs, cells and formatting: shallow,
    // so a page with many tags still gets its microdata read.
    let rows = "<tr><td><font face=Arial>cell<td><b>bold</td></tr>".repeat(3_000);
    let items = "<li><p>one<p>two".repeat(3_000);
    let page = format!(
        "<!doctype html><html><body><table>{rows}</table><ul>{items}</ul>\
         <div itemscope itemtype=https://schema.org/Product><span itemprop=name>Big</span></div></body></html>"
    );
    assert_eq!(offers(&page), vec![offer(Some("Big"), None, None, None)]);
}
