"""Heterogeneous multi-FPGA CNN training (MTrain): devices, training IPs, sub-operation graphs, mapping."""
