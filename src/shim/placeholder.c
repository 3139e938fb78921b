int dk_placeholder;
