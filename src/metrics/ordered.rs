//! A family of metrics exposed in a fixed order of its label sets (a [`Family`] alone lists
//! them in the order of its hash map, which changes from one scrape to the next).

use std::fmt::Debug;
use std::hash::Hash;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::TypedMetric;
use prometheus_client::metrics::family::{Family, MetricConstructor};

/// `family`, registered as `name` with `help`, exposed in the order `order` gives at each
/// scrape; a label set the family does not hold is skipped.
pub(super) struct Ordered<S, M, C> {
    pub(super) name: &'static str,
    pub(super) help: &'static str,
    pub(super) family: Family<S, M, C>,
    pub(super) order: Box<dyn Fn() -> Vec<S> + Send + Sync>,
}

impl<S, M, C> Debug for Ordered<S, M, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ordered")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl<S, M, C> Collector for Ordered<S, M, C>
where
    S: EncodeLabelSet + Clone + Hash + Eq + Debug + Send + Sync + 'static,
    M: EncodeMetric + TypedMetric + Debug + Send + Sync + 'static,
    C: MetricConstructor<M> + Debug + Send + Sync + 'static,
{
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        // Ended with a full stop, as the registry ends the help of what is registered with it.
        let help = format!("{}.", self.help);
        let mut metric = encoder.encode_descriptor(self.name, &help, None, M::TYPE)?;
        for labels in &(self.order)() {
            if let Some(m) = self.family.get(labels) {
                m.encode(metric.encode_family(labels)?)?;
            }
        }
        Ok(())
    }
}
