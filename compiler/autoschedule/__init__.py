"""The template-free auto-scheduler (Ansor style): sketches derived by rules from a compute
definition, randomly annotated into programs (lists of transformation steps), fine-tuned by
evolutionary search on the learned cost model, and a task scheduler for whole networks.
"""
