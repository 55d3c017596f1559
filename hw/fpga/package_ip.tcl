# Package the VTA RTL (hw/rtl and its generated header) as a Vivado IP whose AXI interfaces
# are inferred from the port names: s_axi_control (AXI4-Lite slave), m_axi_fetch, m_axi_load,
# m_axi_compute (AXI4 read masters) and m_axi_store (AXI4 write master), clocked by clk and
# reset by rst (active high); irq is the interrupt (CONTROL.DONE).
proc vta_package_ip {rtl_dir header_dir ip_dir top} {
    set ip_project [create_project -in_memory vta_ip]
    add_files -norecurse [glob [file join $rtl_dir *.v]]
    set header [file join $header_dir vta_config.vh]
    add_files -norecurse $header
    set_property file_type {Verilog Header} [get_files $header]
    set_property is_global_include true [get_files $header]
    set_property top $top [current_fileset]
    update_compile_order -fileset sources_1

    ipx::package_project -root_dir $ip_dir -vendor vta-codesign.org -library vta \
        -taxonomy /UserIP -import_files -force
    set core [ipx::current_core]
    set_property name $top $core
    set_property version 1.0 $core
    set_property display_name "VTA accelerator" $core
    ipx::infer_bus_interfaces xilinx.com:interface:aximm_rtl:1.0 $core
    foreach busif {s_axi_control m_axi_fetch m_axi_load m_axi_compute m_axi_store} {
        ipx::associate_bus_interfaces -busif $busif -clock clk $core
    }
    ipx::associate_bus_interfaces -clock clk -reset rst $core
    set reset [ipx::get_bus_interfaces rst -of_objects $core]
    set_property value ACTIVE_HIGH [ipx::get_bus_parameters POLARITY -of_objects $reset]
    ipx::create_xgui_files $core
    ipx::update_checksums $core
    ipx::check_integrity $core
    ipx::save_core $core
    close_project
    set_property ip_repo_paths [list $ip_dir] [current_project]
    update_ip_catalog -rebuild
}
