"""The reconciler: keeps the owned objects in the Contrail config API equal to the translator's
desired state, with minimal writes in make-before-break order (SPEC section 7)."""
