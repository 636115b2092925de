//! Checking the settings at start-up: every range and syntax, so that a bad setting is refused,
//! named, instead of being clamped or failing later.

use super::{HumanDuration, SettingError, Settings};

impl Settings {
    /// Checks every setting that has a range or a syntax, so that a bad one is refused at
    /// start-up, naming it, instead of being clamped or failing later.
    pub fn validate(&self) -> Result<(), SettingError> {
        fn at_least<T: PartialOrd + std::fmt::Display>(
            env: &'static str,
            flag: &'static str,
            value: T,
            min: T,
        ) -> Result<(), SettingError> {
            if value < min {
                return Err(SettingError { env, flag, message: format!("must be at least {min}; got {value}") });
            }
            Ok(())
        }
        fn positive(env: &'static str, flag: &'static str, value: HumanDuration) -> Result<(), SettingError> {
            if value.0.is_zero() {
                return Err(SettingError { env, flag, message: "must be longer than zero".into() });
            }
            Ok(())
        }
        at_least("DRIFTWATCH_MAX_ATTEMPTS", "max-attempts", self.max_attempts, 1)?;
        // Keys are checked here, never echoed.
        if let Some(key) = self.secret_key.as_deref().filter(|k| !k.trim().is_empty())
            && let Err(e) = driftwatch_core::SecretKey::from_base64(key.trim())
        {
            return Err(SettingError { env: "DRIFTWATCH_SECRET_KEY", flag: "secret-key", message: e.to_string() });
        }
        for key in self.previous_secret_keys.iter().filter(|k| !k.trim().is_empty()) {
            if let Err(e) = driftwatch_core::SecretKey::from_base64(key.trim()) {
                return Err(SettingError {
                    env: "DRIFTWATCH_PREVIOUS_SECRET_KEYS",
                    flag: "previous-secret-keys",
                    message: e.to_string(),
                });
            }
        }
        if !(0.0..=1.0).contains(&self.retry_jitter) {
            return Err(SettingError {
                env: "DRIFTWATCH_RETRY_JITTER",
                flag: "retry-jitter",
                message: format!("must be between 0 and 1 (a fraction of the delay); got {}", self.retry_jitter),
            });
        }
        driftwatch_core::parse_schedule(&self.retry_schedule).map_err(|e| SettingError {
            env: "DRIFTWATCH_RETRY_SCHEDULE",
            flag: "retry-schedule",
            message: format!("{e}; got `{}`", self.retry_schedule),
        })?;
        at_least("DRIFTWATCH_PER_ENDPOINT_CONCURRENCY", "per-endpoint-concurrency", self.per_endpoint_concurrency, 1)?;
        at_least("DRIFTWATCH_DELIVERY_CONCURRENCY", "delivery-concurrency", self.delivery_concurrency, 1)?;
        at_least("DRIFTWATCH_CHECK_CONCURRENCY", "check-concurrency", self.check_concurrency, 1)?;
        at_least("DRIFTWATCH_PER_HOST_CONCURRENCY", "per-host-concurrency", self.per_host_concurrency, 1)?;
        at_least("DRIFTWATCH_PER_ACCOUNT_CONCURRENCY", "per-account-concurrency", self.per_account(), 1)?;
        at_least("DRIFTWATCH_CIRCUIT_THRESHOLD", "circuit-threshold", self.circuit_threshold, 1)?;
        at_least("DRIFTWATCH_FAILURE_THRESHOLD", "failure-threshold", self.failure_threshold, 1)?;
        at_least("DRIFTWATCH_MIN_INTERVAL_SECONDS", "min-interval-seconds", self.min_interval_seconds, 1)?;
        at_least("DRIFTWATCH_POOL_SIZE", "pool-size", self.pool_size, 2)?;
        at_least("DRIFTWATCH_KEEP_RUNS", "keep-runs", self.keep_runs, 1)?;
        at_least("DRIFTWATCH_KEEP_SNAPSHOTS", "keep-snapshots", self.keep_snapshots, 1)?;
        at_least("DRIFTWATCH_MAX_PAGE_BYTES", "max-page-bytes", self.max_page_bytes, 1024)?;
        at_least("DRIFTWATCH_MAX_TEXT_BYTES", "max-text-bytes", self.max_text_bytes, 1024)?;
        at_least("DRIFTWATCH_BROWSER_CONCURRENCY", "browser-concurrency", self.browser_concurrency, 1)?;
        at_least("DRIFTWATCH_BROWSER_RECYCLE_AFTER", "browser-recycle-after", self.browser_recycle_after, 1)?;
        at_least("DRIFTWATCH_BROWSER_MEMORY_MB", "browser-memory-mb", self.browser_memory_mb, 128)?;
        at_least("DRIFTWATCH_MAX_SCREENSHOT_BYTES", "max-screenshot-bytes", self.max_screenshot_bytes, 1024)?;
        self.validate_llm()?;
        positive("DRIFTWATCH_HEADER_TIMEOUT", "header-timeout", self.header_timeout)?;
        positive("DRIFTWATCH_BODY_TIMEOUT", "body-timeout", self.body_timeout)?;
        at_least("DRIFTWATCH_MAX_CONNECTIONS", "max-connections", self.max_connections, 1)?;
        positive("DRIFTWATCH_WEBHOOK_TIMEOUT", "webhook-timeout", self.webhook_timeout)?;
        positive("DRIFTWATCH_WEBHOOK_CONNECT_TIMEOUT", "webhook-connect-timeout", self.webhook_connect_timeout)?;
        positive("DRIFTWATCH_FETCH_TIMEOUT", "fetch-timeout", self.fetch_timeout)?;
        positive("DRIFTWATCH_POLL_INTERVAL", "poll-interval", self.poll_interval)?;
        positive("DRIFTWATCH_CIRCUIT_OPEN_FOR", "circuit-open-for", self.circuit_open_for)?;
        positive("DRIFTWATCH_FAILING_BACKOFF_MAX", "failing-backoff-max", self.failing_backoff_max)?;
        if let Some(url) = &self.public_url {
            let parsed = url::Url::parse(url).ok().filter(|u| matches!(u.scheme(), "http" | "https") && u.has_host());
            if parsed.is_none() {
                return Err(SettingError {
                    env: "DRIFTWATCH_PUBLIC_URL",
                    flag: "public-url",
                    message: format!("must be an http(s) URL such as https://watch.example.com; got `{url}`"),
                });
            }
        }
        if self.metrics_listen.as_deref().is_some_and(|m| m == self.listen) {
            return Err(SettingError {
                env: "DRIFTWATCH_METRICS_LISTEN",
                flag: "metrics-listen",
                message: format!("is the main address {}; leave it unset to serve /metrics there", self.listen),
            });
        }
        for (env, flag, cron) in [
            ("DRIFTWATCH_RETENTION_CRON", "retention-cron", &self.retention_cron),
            ("DRIFTWATCH_SWEEP_CRON", "sweep-cron", &self.sweep_cron),
        ] {
            // As the job scheduler reads it: six fields, seconds first.
            let parser = croner::parser::CronParser::builder()
                .seconds(croner::parser::Seconds::Required)
                .dom_and_dow(true)
                .build();
            parser.parse(cron).map_err(|e| SettingError {
                env,
                flag,
                message: format!("not a cron expression with seconds ({e}); got `{cron}`"),
            })?;
        }
        Ok(())
    }

    /// The model settings: an http(s) base URL, a model with it, positive numbers.
    fn validate_llm(&self) -> Result<(), SettingError> {
        if let Some(url) = &self.llm_base_url {
            let parsed = url::Url::parse(url).ok().filter(|u| matches!(u.scheme(), "http" | "https") && u.has_host());
            if parsed.is_none() {
                return Err(SettingError {
                    env: "DRIFTWATCH_LLM_BASE_URL",
                    flag: "llm-base-url",
                    message: format!("must be an http(s) URL such as http://127.0.0.1:11434/v1; got `{url}`"),
                });
            }
            if self.llm_model.as_deref().is_none_or(|m| m.trim().is_empty()) {
                return Err(SettingError {
                    env: "DRIFTWATCH_LLM_MODEL",
                    flag: "llm-model",
                    message: "must name the model when DRIFTWATCH_LLM_BASE_URL is set".into(),
                });
            }
        }
        for (env, flag, value) in [
            ("DRIFTWATCH_LLM_DEADLINE_SECONDS", "llm-deadline-seconds", self.llm_deadline_seconds),
            ("DRIFTWATCH_LLM_TIMEOUT_SECONDS", "llm-timeout-seconds", self.llm_timeout_seconds),
        ] {
            if value == 0 {
                return Err(SettingError { env, flag, message: "must be at least 1".into() });
            }
        }
        if self.llm_concurrency == 0 {
            return Err(SettingError {
                env: "DRIFTWATCH_LLM_CONCURRENCY",
                flag: "llm-concurrency",
                message: "must be at least 1".into(),
            });
        }
        Ok(())
    }

    /// The operator's model, when one is configured.
    pub fn operator_model(&self) -> Option<driftwatch_ai::OperatorModel> {
        let base_url = url::Url::parse(self.llm_base_url.as_deref()?).ok()?;
        let model = self.llm_model.as_deref().map(str::trim).filter(|m| !m.is_empty())?.to_owned();
        let api_key = self.llm_api_key.clone().filter(|k| !k.trim().is_empty());
        Some(driftwatch_ai::OperatorModel { base_url, model, api_key })
    }
}
