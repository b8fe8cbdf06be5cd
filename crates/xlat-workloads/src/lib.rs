//! xlat-workloads: workload kernels and trace formats.
