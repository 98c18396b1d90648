"""Request parameters: parsed and validated into typed objects."""
