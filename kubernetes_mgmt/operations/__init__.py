"""The operations: instantiate, scale, heal (named VNFCs or the whole
VNF), terminate, and the plans of each, from one typed request."""
