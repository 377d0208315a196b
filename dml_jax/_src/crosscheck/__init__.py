"""The DirectML cross-check pack: DxDispatch models of every operator, and their comparison."""
