# The PS generates the fabric clock and constrains it (its period follows fclk_mhz); the design
# has no other clock and no pins of its own. Compress the bitstream: PYNQ loads it at run time.
set_property BITSTREAM.GENERAL.COMPRESS TRUE [current_design]
