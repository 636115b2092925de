use driftwatch_core::{Compare, Engine, Region, ScreenshotMode, Step, Wait, WatchOptions};
use driftwatch_store::Watch;
use driftwatch_validate::FieldError;

use super::fields::{WatchForm, form_field};
use crate::ui::steps::parse_regions;

#[test]
fn a_stored_watch_reads_back_unchanged_through_the_form() {
    let mut options = WatchOptions::default();
    options.fetch.engine = Engine::Auto;
    options.fetch.wait = Some(Wait::Text("#app .ready".into()));
    options.fetch.screenshot = ScreenshotMode::FullPage;
    options.fetch.steps = vec![
        Step::Click { selector: "button.accept".into() },
        Step::Type { selector: "form input[name=q]".into(), text: " padded \"text\" ".into() },
        Step::Select { selector: "#size".into(), value: String::new() },
        Step::Press { key: "Enter".into() },
        Step::Scroll { selector: Some("footer a".into()) },
        Step::WaitFor { selector: Some("\"odd".into()), ms: None },
        Step::WaitFor { selector: None, ms: Some(250) },
    ];
    options.noise.compare = Compare::TextOrVisual;
    options.noise.min_visual_change_percent = Some(2.5);
    options.noise.ignore_regions = vec![Region { x: 0, y: 0, width: 1280, height: 90 }];
    for wait in [Some(Wait::Delay(1500)), Some(Wait::Text("network_idle".into())), None] {
        options.fetch.wait = wait;
        let mut watch = Watch::new("acc_1", "https://example.com/", chrono::NaiveDateTime::default());
        watch.options = serde_json::to_string(&options).expect("json");
        let mut errors = Vec::new();
        assert_eq!(WatchForm::of(&watch).options(&mut errors), options);
        assert!(errors.is_empty(), "{errors:?}");
    }
    let mut errors = Vec::new();
    assert_eq!(WatchForm::blank().options(&mut errors), WatchOptions::default());
    assert!(errors.is_empty(), "{errors:?}");
}

#[test]
fn validation_errors_of_a_step_or_region_name_its_line() {
    let form =
        WatchForm { steps: "click #a\n\nclick a:::b".into(), ignore_regions: "\n1,1,0,4".into(), ..WatchForm::blank() };
    let step = FieldError::new("options.fetch.steps[1].selector", "not a selector");
    assert_eq!((form_field(&step.field), form.message(step)), ("steps", "line 3: not a selector".to_owned()));
    let region = FieldError::new("options.noise.ignore_regions[0]", "width and height must be above 0");
    assert_eq!(form.message(region), "line 2: width and height must be above 0");
    assert_eq!(parse_regions("1,2,3").unwrap_err(), "line 1: write x,y,width,height in whole pixels, like 0,0,1280,90");
    assert_eq!(form_field("options.fetch.engine"), "engine");
}
