//! The remote-write protocol's messages (Prometheus' `prompb`, version 1), as much of
//! them as the host sends: series of samples and native histograms. A `oneof` of the
//! original is written as its integer member (the same bytes on the wire).

/// `prometheus.WriteRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct WriteRequest {
    /// The series.
    #[prost(message, repeated, tag = "1")]
    pub timeseries: Vec<TimeSeries>,
}

/// `prometheus.TimeSeries`: labels sorted by name, then samples or histograms.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct TimeSeries {
    /// `__name__` and the tags.
    #[prost(message, repeated, tag = "1")]
    pub labels: Vec<Label>,
    /// Float samples.
    #[prost(message, repeated, tag = "2")]
    pub samples: Vec<Sample>,
    /// Native histogram samples.
    #[prost(message, repeated, tag = "4")]
    pub histograms: Vec<Histogram>,
}

/// `prometheus.Label`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Label {
    /// Its name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Its value.
    #[prost(string, tag = "2")]
    pub value: String,
}

/// `prometheus.Sample`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Sample {
    /// The value.
    #[prost(double, tag = "1")]
    pub value: f64,
    /// Unix time in milliseconds.
    #[prost(int64, tag = "2")]
    pub timestamp: i64,
}

/// `prometheus.Histogram`, integer counts: a sparse exponential histogram whose bucket
/// `i` holds values in `(2^((i-1)/2^schema), 2^(i/2^schema)]`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Histogram {
    /// Observations (`count_int`).
    #[prost(uint64, tag = "1")]
    pub count_int: u64,
    /// Their sum.
    #[prost(double, tag = "3")]
    pub sum: f64,
    /// Resolution: 2^schema buckets per doubling.
    #[prost(sint32, tag = "4")]
    pub schema: i32,
    /// Width of the zero bucket.
    #[prost(double, tag = "5")]
    pub zero_threshold: f64,
    /// Observations in the zero bucket (`zero_count_int`).
    #[prost(uint64, tag = "6")]
    pub zero_count_int: u64,
    /// Runs of positive buckets.
    #[prost(message, repeated, tag = "11")]
    pub positive_spans: Vec<BucketSpan>,
    /// Counts of the positive buckets, each as the difference from the one before.
    #[prost(sint64, repeated, tag = "12")]
    pub positive_deltas: Vec<i64>,
    /// Unix time in milliseconds.
    #[prost(int64, tag = "15")]
    pub timestamp: i64,
}

/// `prometheus.BucketSpan`: `length` buckets starting `offset` after the last span.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct BucketSpan {
    /// Gap from the end of the previous span (from 0 for the first).
    #[prost(sint32, tag = "1")]
    pub offset: i32,
    /// Buckets in the run.
    #[prost(uint32, tag = "2")]
    pub length: u32,
}
