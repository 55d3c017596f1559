# Build the VTA overlay (bitstream + .hwh) for a Zynq board with Vivado:
#   vivado -mode batch -source build.tcl -tclargs key=value ...
# scripts/build_bitstream (hw/bitstream.py) passes every key from its board table and the
# configuration; nothing here is board-specific.
#   part board_part ps(ps7|psu) fclk_mhz control_address control_port memory_port
#   memory_width ip_name top rtl_dir header_dir out_dir jobs
foreach arg $argv {
    lassign [split $arg "="] key value
    set opt($key) $value
}
set here [file dirname [file normalize [info script]]]

create_project vta_overlay $opt(out_dir)/project -part $opt(part) -force
set_property board_part $opt(board_part) [current_project]
source [file join $here package_ip.tcl]
vta_package_ip $opt(rtl_dir) $opt(header_dir) $opt(out_dir)/ip $opt(top)

create_bd_design vta_bd
source [file join $here block_design.tcl]
vta_block_design opt
validate_bd_design
save_bd_design

set bd_file [get_files vta_bd.bd]
generate_target all $bd_file
make_wrapper -files $bd_file -top
set generated [file join $opt(out_dir) project vta_overlay.gen sources_1 bd vta_bd]
add_files -norecurse [file join $generated hdl vta_bd_wrapper.v]
set_property top vta_bd_wrapper [current_fileset]
add_files -fileset constrs_1 -norecurse [file join $here vta.xdc]

launch_runs synth_1 -jobs $opt(jobs)
wait_on_run synth_1
launch_runs impl_1 -to_step write_bitstream -jobs $opt(jobs)
wait_on_run impl_1
open_run impl_1
report_utilization -file $opt(out_dir)/utilization.txt
report_timing_summary -file $opt(out_dir)/timing.txt
set slack [get_property SLACK [get_timing_paths -max_paths 1 -nworst 1 -setup]]
if {$slack < 0} {
    error "timing not met at $opt(fclk_mhz) MHz: worst setup slack $slack ns"
}

# The overlay: the bitstream and its hardware description, named alike for pynq.Overlay.
set runs [file join $opt(out_dir) project vta_overlay.runs impl_1]
file copy -force [file join $runs vta_bd_wrapper.bit] [file join $opt(out_dir) vta.bit]
file copy -force [lindex [get_files -all vta_bd.hwh] 0] [file join $opt(out_dir) vta.hwh]
puts "vta overlay: $opt(out_dir)/vta.bit, $opt(out_dir)/vta.hwh"
