//! The k6 layer's VU numbers (`loadtest:k6-layer/vu`): `vu.info`'s numbers as one list
//! of floats, which the runtime hands the layer as one typed array instead of lifting a
//! record field by field.

use super::imports::vu::VuView;
use super::layer::bindings::loadtest::k6_layer::vu;

impl vu::Host for VuView<'_> {
    fn numbers(&mut self) -> wasmtime::Result<Vec<f64>> {
        // Exact as floats up to 2^53: ids and iteration counts stay far below.
        Ok(vec![
            self.identity.vu_id as f64,
            self.identity.vu_id_in_scenario as f64,
            self.iteration as f64,
            self.iteration_in_scenario() as f64,
        ])
    }
}
